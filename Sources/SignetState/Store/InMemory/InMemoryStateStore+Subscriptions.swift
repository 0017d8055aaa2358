public import AppStoreModels
import SignetCore
import Synchronization

// InMemoryStateStore: purchases (SubscriptionStore, SubscriptionTransaction).

/// The ``SubscriptionStore`` role.
extension InMemoryStateStore {
    public func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
        contents.withLock { $0.subscriptions[originalTransactionId] }
    }

    public func subscriptions(appAccountToken: AppAccountToken) throws -> [SubscriptionSnapshot] {
        contents.withLock { contents in
            (contents.byToken[appAccountToken] ?? []).sorted().compactMap { contents.subscriptions[$0] }
        }
    }

    /// A scan: the memory store serves embedding and tests.
    package func subscriptions(appTransactionId: String) throws -> [SubscriptionSnapshot] {
        contents.withLock { contents in
            contents.subscriptions.values.filter { $0.appTransactionId == appTransactionId }.sorted { $0.originalTransactionId < $1.originalTransactionId }
        }
    }

    package func originalTransactionIds(after: String?, limit: Int) throws -> [String] {
        contents.withLock { contents in
            // Sorted per call: the memory store serves embedding and tests, not millions of purchases.
            Array(contents.subscriptions.keys.filter { $0 > (after ?? "") }.sorted().prefix(max(0, limit)))
        }
    }

    package func staleSubscriptions(endedAfter: Int64, endedBefore: Int64, after: String?, limit: Int) throws -> [StalePurchase] {
        contents.withLock { contents in
            // A scan: the memory store serves embedding and tests.
            let stale = contents.subscriptions.values.compactMap { snapshot -> StalePurchase? in
                guard snapshot.expectsRenewal, let end = snapshot.periodEnd, end > endedAfter, end <= endedBefore,
                    after.map({ snapshot.originalTransactionId > $0 }) ?? true
                else { return nil }
                return StalePurchase(originalTransactionId: snapshot.originalTransactionId, periodEnd: end, environment: snapshot.environment)
            }
            return Array(stale.sorted { $0.originalTransactionId < $1.originalTransactionId }.prefix(max(0, limit)))
        }
    }

    public var entitlementNames: EntitlementNames { contents.withLock { $0.entitlementNames } }

    package func replaceEntitlementNames(_ names: EntitlementNames) throws {
        contents.withLock { $0.entitlementNames = names }
    }
}

extension InMemoryStateStore.Transaction: SubscriptionTransaction {
    func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
        snapshots[originalTransactionId] ?? base.subscriptions[originalTransactionId]
    }

    func save(_ snapshot: SubscriptionSnapshot) throws { snapshots[snapshot.originalTransactionId] = snapshot }

    /// A scan: the memory store serves embedding and tests, where purchases are few.
    func subscriptionsDue(atOrBefore cutoff: Int64, limit: Int) throws -> [SubscriptionSnapshot] {
        var due: [SubscriptionSnapshot] = []
        for (id, stored) in base.subscriptions where snapshots[id] == nil {
            if let boundary = stored.nextBoundary, boundary <= cutoff { due.append(stored) }
        }
        for snapshot in snapshots.values {
            if let boundary = snapshot.nextBoundary, boundary <= cutoff { due.append(snapshot) }
        }
        due.sort { ($0.nextBoundary ?? 0, $0.originalTransactionId) < ($1.nextBoundary ?? 0, $1.originalTransactionId) }
        return Array(due.prefix(max(0, limit)))
    }
}
