/// What stages learned about a record, by part key type: the storage behind
/// ``Record/subscript(_:)``, kept by its ``RecordOutcome`` after the commit.
@usableFromInline
struct RecordParts: Sendable {
    /// A record carries about half a dozen parts, so a linear scan comparing type
    /// identities beats hashing them.
    @usableFromInline var entries: [(key: ObjectIdentifier, value: any Sendable)] = []

    @inlinable
    init() {}

    @inlinable
    subscript<Key: RecordPartKey>(_ key: Key.Type) -> Key.Value? {
        get {
            guard let slot = slot(of: key) else { return nil }
            return entries[slot].value as? Key.Value
        }
        set {
            if let slot = slot(of: key) {
                if let newValue { entries[slot].value = newValue } else { entries.remove(at: slot) }
            } else if let newValue {
                // A record gathers half a dozen parts on its way through the stages: one
                // allocation up front instead of a regrowth at the second, fourth and seventh.
                if entries.isEmpty { entries.reserveCapacity(8) }
                entries.append((ObjectIdentifier(key), newValue))
            }
        }
    }

    /// Where `key`'s part is in `entries`; by index, so comparing keys copies no values.
    @inlinable
    func slot<Key: RecordPartKey>(of key: Key.Type) -> Int? {
        let id = ObjectIdentifier(key)
        return entries.indices.first { entries[$0].key == id }
    }
}
