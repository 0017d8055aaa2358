import Foundation
import Synchronization

/// Writes each message's value as one line on standard output (NDJSON).
///
/// A write counts as acknowledged once the kernel accepted it; a closed pipe (EPIPE, EBADF)
/// is a permanent error, so the run stops at once and commits nothing that nobody read.
public final class StdoutSink: Sink {
    /// A slow reader blocks `write(2)`: off the cooperative pool, one write at a time.
    private let executor = BlockingExecutor(label: "signet.sink.stdout")

    /// A sink writing each message's value as a line to standard output.
    public init() {}

    public func write(_ messages: [OutputMessage]) async throws {
        try await executor.runInPlace { try LineWriter.write(messages, to: STDOUT_FILENO, destination: "stdout") }
    }
}
