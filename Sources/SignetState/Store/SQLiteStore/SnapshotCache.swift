/// A bounded cache of committed snapshots, so a busy purchase is not read back from
/// SQLite for every notification.
///
/// Two generations instead of an LRU list: lookups and inserts are one or two hash
/// operations, and when the young generation fills up the old one is dropped whole.
/// Memory stays below `capacity` entries however many purchases pass through.
/// A class so a transaction can consult (and promote in) the store's cache without copying it;
/// it is only touched under the store's lock.
final class SnapshotCache {
    private var young: [String: SubscriptionSnapshot] = [:]
    private var old: [String: SubscriptionSnapshot] = [:]
    private let generationSize: Int

    init(capacity: Int) {
        generationSize = max(1, capacity / 2)
    }

    func get(_ key: String) -> SubscriptionSnapshot? {
        if let hit = young[key] { return hit }
        guard let hit = old.removeValue(forKey: key) else { return nil }
        put(hit)
        return hit
    }

    func put(_ snapshot: SubscriptionSnapshot) {
        if young.count >= generationSize, young[snapshot.originalTransactionId] == nil {
            old = young
            young = [:]
            young.reserveCapacity(generationSize)
        }
        young[snapshot.originalTransactionId] = snapshot
    }

    func removeAll() {
        young = [:]
        old = [:]
    }

    var count: Int { young.count + old.count }
}
