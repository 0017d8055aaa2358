/// How long a non-renewing subscription lasts when its transaction carries no
/// `expiresDate` (Apple documents that field for auto-renewable subscriptions only): the
/// `non_renewing_durations` setting of the `transition` stage.
///
/// Keys are product ids, or prefixes ending in `*` (as in `fanout` routes). An exact id
/// wins over a prefix, a longer prefix over a shorter one. A product without an entry has
/// no known end: it stays active and its events say `expiresDateSource: unknown`.
public struct NonRenewingDurations: Sendable, Hashable {
    private var exact: [String: Int64] = [:]
    /// (prefix without `*`, milliseconds), longest prefix first.
    private var prefixes: [(prefix: String, milliseconds: Int64)] = []

    /// No durations: every non-renewing purchase without an `expiresDate` has no known end.
    public init() {}

    /// Sets the duration for a product id, or for a prefix written with a trailing `*`.
    public mutating func set(_ pattern: String, _ duration: Duration) {
        let milliseconds = duration.components.seconds.multipliedReportingOverflow(by: 1000)
        let value = milliseconds.overflow ? Int64.max : milliseconds.partialValue
        if pattern.hasSuffix("*") {
            let prefix = String(pattern.dropLast())
            prefixes.removeAll { $0.prefix == prefix }
            prefixes.append((prefix, value))
            prefixes.sort { $0.prefix.count > $1.prefix.count || ($0.prefix.count == $1.prefix.count && $0.prefix < $1.prefix) }
        } else {
            exact[pattern] = value
        }
    }

    /// The duration in milliseconds for `productId`, if one is configured.
    public func milliseconds(for productId: String?) -> Int64? {
        guard let productId else { return nil }
        if let value = exact[productId] { return value }
        return prefixes.first { productId.hasPrefix($0.prefix) }?.milliseconds
    }

    /// Whether no product has a duration.
    public var isEmpty: Bool { exact.isEmpty && prefixes.isEmpty }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.exact == rhs.exact && lhs.prefixes.map(\.prefix) == rhs.prefixes.map(\.prefix)
            && lhs.prefixes.map(\.milliseconds) == rhs.prefixes.map(\.milliseconds)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(exact)
        for entry in prefixes {
            hasher.combine(entry.prefix)
            hasher.combine(entry.milliseconds)
        }
    }
}
