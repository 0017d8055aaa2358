/// A state store cannot be used: not open yet, or held by another writer.
public struct StateStoreError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// Another writer holds the store (a configuration problem: one writer per database).
    public var isInUse: Bool

    /// An error saying `description`; `inUse` when another writer holds the store.
    public init(_ description: String, inUse: Bool = false) {
        self.description = description
        self.isInUse = inUse
    }
}
