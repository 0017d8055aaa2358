import SignetCore
import Synchronization

/// A state store as a named resource of a pipeline (`stores:`): `dedupe` and
/// `transition` naming the same store share this one instance, so they see each
/// other's commits, and the runner opens it before them and closes it after them.
public final class StateStoreResource: PipelineResource {
    /// What ``open()`` opens; nil for a store handed in already open.
    public let configuration: StateStoreConfiguration?
    private let opened = Mutex<(any StateStore)?>(nil)

    /// A store opened by ``open()`` from `configuration`.
    public init(_ configuration: StateStoreConfiguration) {
        self.configuration = configuration
    }

    /// A store the caller owns and has opened (embedding, tests); open and close leave it alone.
    public init(store: any StateStore) {
        self.configuration = nil
        opened.withLock { $0 = store }
    }

    public var identity: String? { configuration?.identity }

    public func open() async throws {
        guard let configuration else { return }
        let store = try configuration.open()
        opened.withLock { $0 = store }
    }

    public func close() async throws {
        guard configuration != nil else { return }
        let store = opened.withLock { current in
            defer { current = nil }
            return current
        }
        try store?.close()
    }

    /// The opened store; throws when the runner has not opened it.
    public func store() throws -> any StateStore {
        guard let store = opened.withLock({ $0 }) else {
            throw SQLiteError(code: 21, message: "the state store is not open (was the pipeline's resource opened?)", context: "\(configuration.map { "\($0)" } ?? "store")")
        }
        return store
    }
}
