public import SignetCore
import Synchronization

/// A state store as a named resource of a pipeline (`stores:`): `dedupe` and
/// `transition` naming the same store share this one instance, so they see each
/// other's commits, and the runner opens it before them and closes it after them.
///
/// Any store type can stand behind it: a registered store type's factory returns
/// `StateStoreResource(identity:open:)` with a function that opens its store (a
/// PostgreSQL pool, say); `sqlite` and `memory` use `init(_:)`.
public final class StateStoreResource: PipelineResource {
    public let identity: String?
    /// The store's `entitlements:` setting, stored when the resource opens; nil keeps what
    /// the store has.
    public let entitlementNames: EntitlementNames?
    private let opener: (@Sendable () async throws -> any StateStore)?
    private let opened = Mutex<(any StoreRoles)?>(nil)

    /// A store opened by ``open()`` from `configuration` (`sqlite` or `memory`).
    public convenience init(_ configuration: StateStoreConfiguration, entitlementNames: EntitlementNames? = nil) {
        self.init(identity: configuration.identity, entitlementNames: entitlementNames) { try configuration.open() }
    }

    /// A store that `open` opens when the runner opens the resource; `identity` names
    /// what it opens (two resources of a pipeline must not share one).
    public init(
        identity: String?, entitlementNames: EntitlementNames? = nil, open: @escaping @Sendable () async throws -> any StateStore
    ) {
        self.identity = identity
        self.entitlementNames = entitlementNames
        self.opener = open
    }

    /// A store the caller owns and has opened (embedding, tests); open and close leave it alone.
    public init(store: any StateStore) {
        self.identity = nil
        self.entitlementNames = nil
        self.opener = nil
        opened.withLock { $0 = store.roles.store }
    }

    public func open() async throws {
        guard let opener else { return }
        let store = try await opener().roles.store
        do {
            if let entitlementNames {
                // A write to the store, which may block (a server store): off the cooperative pool.
                try await withTaskExecutorPreference(BlockingExecutor(label: "signet.store.names")) {
                    try store.replaceEntitlementNames(entitlementNames)
                }
            }
        } catch {
            try? store.close()
            throw error
        }
        opened.withLock { $0 = store }
    }

    public func close() async throws {
        guard opener != nil else { return }
        let store = opened.withLock { current in
            defer { current = nil }
            return current
        }
        try store?.close()
    }

    /// The database and the entitlement names the opened store keeps.
    public var summary: String? {
        guard let store = opened.withLock({ $0 }) else { return nil }
        return "\(identity ?? "in memory"), entitlement names: \(store.entitlementNames.summary)"
    }

    /// The opened store; throws when the runner has not opened it.
    public func store() throws -> any StateStore {
        try roles()
    }

    /// The opened store's roles; throws when the runner has not opened it.
    package func roles() throws -> any StoreRoles {
        guard let store = opened.withLock({ $0 }) else {
            throw StateStoreError("the state store '\(identity ?? "store")' is not open (was the pipeline's resource opened?)")
        }
        return store
    }
}
