import Synchronization

/// A thread-safe, ordered log shared by sources, stages and sinks of one test.
public final class EventLog: Sendable {
    private let storage = Mutex<[String]>([])
    public init() {}
    public func append(_ event: String) { storage.withLock { $0.append(event) } }
    public var events: [String] { storage.withLock { $0 } }
    public func index(of event: String) -> Int? { events.firstIndex(of: event) }
}
