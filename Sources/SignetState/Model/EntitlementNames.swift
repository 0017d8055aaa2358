import Foundation
public import SignetCore

/// Which entitlement names (`pro`, `ad_free`) each product or subscription group grants: a
/// store's `entitlements:` setting, so a backend asks "has this user pro?" without knowing
/// product ids.
///
/// A name is granted by a purchase whose `productId` or `subscriptionGroupIdentifier` is
/// listed under it; a purchase may grant several names. The store keeps the mapping (so
/// `signet entitlements`, the `/v1` API and the PostgreSQL view `signet_entitlements` read the
/// same one as the pipeline that wrote it), and a pipeline that configures it replaces the
/// stored one when it opens the store.
public struct EntitlementNames: Sendable, Hashable {
    /// Entitlement name → the product ids and subscription group ids that grant it, sorted.
    public private(set) var grants: [String: [String]]
    /// Product or group id → the names it grants, sorted: the lookup of every event.
    private var names: [String: [String]]

    /// No names: events and answers carry `entitlements: []`.
    public static let none = EntitlementNames([:])

    /// - Parameter grants: entitlement name → product ids or subscription group ids.
    public init(_ grants: [String: [String]]) {
        var sorted: [String: [String]] = [:]
        var names: [String: Set<String>] = [:]
        for (name, identifiers) in grants {
            sorted[name] = Array(Set(identifiers)).sorted()
            for identifier in identifiers { names[identifier, default: []].insert(name) }
        }
        self.grants = sorted
        self.names = names.mapValues { $0.sorted() }
    }

    /// From `(entitlement, identifier)` pairs, as a store keeps them (one row each).
    public init(pairs: [(entitlement: String, identifier: String)]) {
        self.init(Dictionary(grouping: pairs, by: \.entitlement).mapValues { $0.map(\.identifier) })
    }

    /// The pairs of ``init(pairs:)``, sorted: one row each in a store.
    public var pairs: [(entitlement: String, identifier: String)] {
        grants.keys.sorted().flatMap { name in grants[name, default: []].map { (name, $0) } }
    }

    /// Whether no product or group grants a name (events and answers then carry none).
    public var isEmpty: Bool { grants.isEmpty }

    /// The names a purchase of `productId` in the subscription group `subscriptionGroupId`
    /// grants, sorted; empty when neither is listed.
    public func names(productId: String?, subscriptionGroupId: String?) -> [String] {
        let byProduct = productId.flatMap { names[$0] } ?? []
        guard let group = subscriptionGroupId.flatMap({ names[$0] }) else { return byProduct }
        return byProduct.isEmpty ? group : Array(Set(byProduct).union(group)).sorted()
    }

    /// `events` with their ``EntitlementEvent/entitlements`` filled in.
    func annotated(_ events: [EntitlementEvent]) -> [EntitlementEvent] {
        guard !isEmpty else { return events }
        return events.map { event in
            var event = event
            event.entitlements = names(productId: event.productId, subscriptionGroupId: event.subscriptionGroupIdentifier)
            return event
        }
    }

    /// "pro: pro.monthly, pro.yearly; ad_free: 21482956", for logs.
    public var summary: String {
        guard !isEmpty else { return "none" }
        return grants.keys.sorted().map { "\($0): \(grants[$0, default: []].joined(separator: ", "))" }.joined(separator: "; ")
    }
}

extension ConfigField {
    /// The `entitlements:` key of every store type.
    public static let entitlementNames = ConfigField(
        "entitlements", .map(.stringList(allowed: nil)), .optional,
        "entitlement names and the product ids or subscription group ids that grant each; on every event, in "
            + "`signet entitlements`, /v1/entitlements and the view signet_entitlements. Kept in the store: "
            + "a pipeline that sets it replaces what is stored, one that leaves it out keeps it",
        example: "{ pro: [com.example.pro.monthly, com.example.pro.yearly], ad_free: [\"21482956\"] }")
}

extension EntitlementNames {
    /// The `entitlements:` of a store's settings; nil when the key is absent (the stored
    /// mapping stays as it is).
    public init?(_ config: ParsedConfig) throws(ConfigError) {
        guard config.contains(ConfigField.entitlementNames.name) else { return nil }
        var grants: [String: [String]] = [:]
        for entry in try config.map(ConfigField.entitlementNames.name) {
            guard case .stringList(let identifiers) = entry.value else { continue }
            let listed = identifiers.map { $0.trimmingCharacters(in: .whitespaces) }
            guard !entry.name.isEmpty, !listed.isEmpty, !listed.contains("") else {
                throw ConfigError(
                    "'entitlements.\(entry.name)' needs at least one product id or subscription group id, none empty",
                    at: entry.location)
            }
            grants[entry.name] = listed
        }
        self.init(grants)
    }
}
