/// One rule of `fanout`: events matching every given condition go to `sinks`.
///
/// ```yaml
/// routes:
///   - sinks: [refunds_file]
///     when: { type: [refunded, revoked], environment: [Production], product: ["com.example.pro.*"] }
/// ```
/// An absent condition matches everything; a product pattern ending in `*` matches by prefix.
public struct FanoutRoute: Sendable, Hashable {
    /// The sinks (by name) that receive a matching event.
    public var sinks: [String]
    /// Event types that match (`granted`, `revoked`, …); nil: any.
    public var types: Set<String>?
    /// Environments that match; nil: any.
    public var environments: Set<String>?
    /// Product ids that match (a pattern ending in `*` matches by prefix); nil: any.
    public var products: [String]?

    /// A route sending events that match every condition given to `sinks`.
    public init(sinks: [String], types: Set<String>? = nil, environments: Set<String>? = nil, products: [String]? = nil) {
        self.sinks = sinks
        self.types = types
        self.environments = environments
        self.products = products
    }

    /// Whether an event with these header values matches.
    public func matches(type: String?, environment: String?, product: String?) -> Bool {
        if let types, !(type.map(types.contains) ?? false) { return false }
        if let environments, !(environment.map(environments.contains) ?? false) { return false }
        if let products {
            guard let product else { return false }
            return products.contains { Self.product(product, matches: $0) }
        }
        return true
    }

    /// Whether `product` matches `pattern`: equal, or with a pattern ending in `*`, by prefix
    /// (`retention:` rules match products the same way).
    package static func product(_ product: String, matches pattern: String) -> Bool {
        pattern.hasSuffix("*") ? product.hasPrefix(pattern.dropLast()) : product == pattern
    }
}
