/// One rule of `fanout`: events matching every given condition go to `sinks`.
///
/// ```yaml
/// routes:
///   - sinks: [refunds_file]
///     when: { type: [refunded, revoked], environment: [Production], product: ["com.example.pro.*"] }
/// ```
/// An absent condition matches everything; a product pattern ending in `*` matches by prefix.
public struct FanoutRoute: Sendable, Hashable {
    public var sinks: [String]
    public var types: Set<String>?
    public var environments: Set<String>?
    public var products: [String]?

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
            return products.contains { pattern in
                pattern.hasSuffix("*") ? product.hasPrefix(pattern.dropLast()) : product == pattern
            }
        }
        return true
    }
}
