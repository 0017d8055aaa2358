import Foundation
public import SignetCore
import Synchronization

/// Keeps every delivered message; can fail a number of times first, or forever for some messages.
public final class CaptureSink: Sink {
    public let name: String
    private let log: EventLog?
    private struct State {
        var messages: [OutputMessage] = []
        var failuresLeft: Int
        var attempts = 0
        var opened = 0
        var closed = 0
    }
    private let state: Mutex<State>
    /// Messages for which a write fails no matter how often it is retried.
    private let poison: (@Sendable (OutputMessage) -> Bool)?
    /// Called after a successful write, with the total messages delivered so far.
    private let onWrite: (@Sendable (Int) async -> Void)?

    public init(
        name: String = "capture", log: EventLog? = nil, failTimes: Int = 0,
        poison: (@Sendable (OutputMessage) -> Bool)? = nil, onWrite: (@Sendable (Int) async -> Void)? = nil
    ) {
        self.name = name
        self.log = log
        self.state = Mutex(State(failuresLeft: failTimes))
        self.poison = poison
        self.onWrite = onWrite
    }

    public func open() async throws { state.withLock { $0.opened += 1 } }
    public func close() async throws { state.withLock { $0.closed += 1 } }

    public func write(_ messages: [OutputMessage]) async throws {
        let text = messages.map { String(decoding: $0.key ?? $0.value, as: UTF8.self) }.joined(separator: ",")
        let failure: Bool = state.withLock { state in
            state.attempts += 1
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                return true
            }
            return false
        }
        if failure || messages.contains(where: { poison?($0) ?? false }) {
            log?.append("fail \(name):" + text)
            throw TestFailure("sink \(name) is down")
        }
        let total = state.withLock { state in
            state.messages.append(contentsOf: messages)
            return state.messages.count
        }
        log?.append("write \(name):" + text)
        await onWrite?(total)
    }

    public var messages: [OutputMessage] { state.withLock { $0.messages } }
    public var values: [String] { messages.map { String(decoding: $0.value, as: UTF8.self) } }
    public var attempts: Int { state.withLock { $0.attempts } }
    public var openCount: Int { state.withLock { $0.opened } }
    public var closeCount: Int { state.withLock { $0.closed } }

    /// The delivered dead-letter JSON objects.
    public func jsonObjects() throws -> [[String: Any]] {
        try messages.map { message in
            guard let object = try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any] else {
                throw TestFailure("not a JSON object: \(String(decoding: message.value, as: UTF8.self))")
            }
            return object
        }
    }
}
