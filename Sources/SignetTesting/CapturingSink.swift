import Synchronization
package import SignetCore

/// A sink that keeps what it is given, for `signet test`: nothing is written anywhere.
package final class CapturingSink: Sink {
    private let captured = Mutex<[OutputMessage]>([])

    public init() {}

    /// Everything written so far, in order.
    public var messages: [OutputMessage] { captured.withLock { $0 } }

    public func write(_ messages: [OutputMessage]) async throws {
        captured.withLock { $0.append(contentsOf: messages) }
    }
}
