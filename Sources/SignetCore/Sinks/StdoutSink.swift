import Foundation
import Synchronization

/// Writes each message's value as one line on standard output (NDJSON).
///
/// A write counts as acknowledged once the kernel accepted it; a closed pipe (EPIPE, EBADF)
/// is a permanent error, so the run stops at once and commits nothing that nobody read.
public final class StdoutSink: Sink {
    private let lock = Mutex(())

    public init() {}

    public func write(_ messages: [OutputMessage]) async throws {
        try lock.withLock { _ in try LineWriter.write(messages, to: STDOUT_FILENO, destination: "stdout") }
    }
}
