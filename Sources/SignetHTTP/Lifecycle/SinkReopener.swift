import Logging
import ServiceLifecycle
import SignetCore
import UnixSignals

/// Reopens the pipeline's file sinks on SIGHUP, for log rotation (logrotate's
/// `postrotate ... kill -HUP`): without it SIGHUP would end the process (exit 129, no drain).
///
/// Each sink reopens between two of its writes, so every batch lands whole in the old file or
/// the new one. Ends with the group's graceful shutdown.
struct SinkReopener: Service {
    let sinks: [(name: String, sink: any ReopenableSink)]
    let logger: Logger

    /// The pipeline's reopenable sinks (the dead-letter sink included); nil when it has none.
    init?(pipeline: Pipeline, logger: Logger) {
        var sinks: [(String, any ReopenableSink)] = pipeline.sinks.compactMap { named in
            (named.sink as? any ReopenableSink).map { (named.name, $0) }
        }
        if let deadLetter = pipeline.deadLetter.sink as? any ReopenableSink { sinks.append(("dead_letter", deadLetter)) }
        guard !sinks.isEmpty else { return nil }
        self.sinks = sinks
        self.logger = logger
    }

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            for (name, sink) in sinks {
                do {
                    try await sink.reopen()
                } catch {
                    // Keeps writing to the file it has: nothing is lost, the rotation just did not happen.
                    logger.error("SIGHUP: cannot reopen sink '\(name)': \(error); it keeps writing to the file it had")
                }
            }
            logger.notice("SIGHUP: reopened \(sinks.map(\.name).joined(separator: ", "))")
        }
    }
}
