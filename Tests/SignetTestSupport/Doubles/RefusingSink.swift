public import SignetCore
import Synchronization

/// Accepts every message except those `refuses` matches, which it refuses for good
/// (``UndeliverableMessages``, as the http sink does on a 4xx).
public final class RefusingSink: Sink {
    private let refuses: @Sendable (OutputMessage) -> Bool
    private let accepted = Mutex<[OutputMessage]>([])

    public init(refusing refuses: @escaping @Sendable (OutputMessage) -> Bool) { self.refuses = refuses }

    public func write(_ messages: [OutputMessage]) async throws {
        let refusals = messages.indices.filter { refuses(messages[$0]) }.map {
            UndeliverableMessages.Refusal(index: $0, rejection: RecordRejection("test_refused", "refused: \(String(decoding: messages[$0].value, as: UTF8.self))"))
        }
        accepted.withLock { $0 += messages.indices.filter { !refuses(messages[$0]) }.map { messages[$0] } }
        if !refusals.isEmpty { throw UndeliverableMessages(refusals) }
    }

    public var values: [String] { accepted.withLock { $0.map { String(decoding: $0.value, as: UTF8.self) } } }
}
