import Logging
import Synchronization

/// Keeps what a logger says, with its level, so a test can assert on a log line; also
/// passes warnings and up to the test logger's handler so failures stay readable.
final class LogCapture: Sendable {
    private let entries = Mutex<[(level: Logger.Level, message: String)]>([])

    /// A logger at `.info` that records into this capture.
    var logger: Logger {
        Logger(label: "signet.kafka.test") { _ in Handler(capture: self) }
    }

    /// The messages logged at `level`.
    func messages(at level: Logger.Level) -> [String] {
        entries.withLock { $0.filter { $0.level == level }.map(\.message) }
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            capture.entries.withLock { $0.append((event.level, "\(event.message)")) }
            if event.level >= .warning { testLogger.log(level: event.level, event.message) }
        }
    }
}
