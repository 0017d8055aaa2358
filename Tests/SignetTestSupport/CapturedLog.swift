public import Logging
import Synchronization

/// A logger whose lines a test can read back: for behaviour that is only visible in the log
/// (a pause Apple asked for, said once with its end).
public final class CapturedLog: Sendable {
    public struct Line: Sendable {
        public var level: Logger.Level
        public var message: String
    }

    private let lines = Mutex<[Line]>([])

    public init() {}

    /// A logger writing here (every level).
    public var logger: Logger {
        var logger = Logger(label: "captured") { _ in Handler(log: self) }
        logger.logLevel = .trace
        return logger
    }

    /// Every line so far, in order.
    public var all: [Line] { lines.withLock { $0 } }

    /// The messages logged at `level`.
    public func messages(at level: Logger.Level) -> [String] { all.filter { $0.level == level }.map(\.message) }

    /// The messages containing `text`.
    public func messages(containing text: String) -> [String] { all.map(\.message).filter { $0.contains(text) } }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.lines.withLock { $0.append(Line(level: event.level, message: "\(event.message)")) }
        }
    }
}
