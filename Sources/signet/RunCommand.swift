import ArgumentParser
import Dispatch
import Synchronization
import Foundation
import Logging
import Signet
import SignetCore

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Runs a pipeline until its input ends or SIGTERM/SIGINT arrives.",
        discussion: """
            Without --pipeline, runs the embedded default (Pipelines/stdin.yaml): NDJSON notifications on stdin, one entitlement-change event per line on stdout for every change of access, rejects in $SIGNET_DATA_DIR/dead-letter.ndjson. It needs SIGNET_BUNDLE_ID and SIGNET_ENVIRONMENT (and SIGNET_APP_APPLE_ID for Production).

            A pipeline that keeps data in $SIGNET_DATA_DIR (the default one does) locks that folder: a second writer exits with status 2 ("in use by pid N"); readers such as `signet entitlements` stay allowed. The folder must be a writable directory (it is created when only its last part is missing).

            On SIGTERM or SIGINT Signet stops reading, delivers and commits what is in flight, and exits; a second signal, or the pipeline's shutdown_timeout passing, exits at once (uncommitted input is read again on restart). A closed stdout (`| head`) stops the run at once with exit 1; nothing past what was written is committed. A summary with counts per reason goes to stderr at the end, and a warning when every record was rejected.

            Examples:
              SIGNET_BUNDLE_ID=com.example SIGNET_ENVIRONMENT=Sandbox signet run < notifications.ndjson
              signet run --pipeline Pipelines/kafka.yaml
            """)

    @Option(name: .long, help: "The pipeline file (default: the embedded Pipelines/stdin.yaml).")
    var pipeline: String?

    @Option(name: .long, help: "Write the run summary as JSON to this file.")
    var summaryJson: String?

    @Option(name: .long, help: "Exit 1 when more than this share of the records read (0 to 1) was rejected.")
    var failOnRejectRatio: Double?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        if let failOnRejectRatio, !(0...1).contains(failOnRejectRatio) {
            throw ValidationError("--fail-on-reject-ratio must be between 0 and 1, got \(failOnRejectRatio)")
        }
    }

    func run() async throws {
        Terminal.bootstrapLogging(level: logLevel)
        signal(SIGPIPE, SIG_IGN)
        let loader = PipelineLoader(registry: Signet.makeRegistry(), environment: Terminal.environment)
        let text: String
        if let pipeline {
            guard let data = FileManager.default.contents(atPath: pipeline) else {
                throw ConfigurationFailure(description: "signet: cannot read the pipeline file '\(pipeline)'")
            }
            text = String(decoding: data, as: UTF8.self)
        } else {
            text = Signet.defaultPipelineYAML
        }
        // Checked and locked before the pipeline opens anything in it.
        var lock: DataDirectoryLock?
        if text.contains("SIGNET_DATA_DIR") {
            lock = try DataDirectoryLock.acquire(Terminal.environment["SIGNET_DATA_DIR"] ?? "signet-data")
        }
        defer { withExtendedLifetime(lock) {} }
        let built: Pipeline
        do {
            built = try loader.load(yaml: text, file: pipeline ?? Signet.defaultPipelineName)
        } catch {
            throw ConfigurationFailure(description: error.description)
        }

        let runner = PipelineRunner(pipeline: built)
        let signals = SignalWatcher(shutdownTimeout: built.settings.shutdownTimeout) {
            await runner.requestStop()
        }
        defer { signals.cancel() }
        let summary: RunSummary
        do {
            summary = try await runner.run()
        } catch let error as SinkError {
            // One line a user can act on (closed stdout, full disk), with the progress so far.
            let progress = runner.currentSummary
            Terminal.error("\(error.description) (\(progress.read) read, \(progress.delivered) delivered before it)")
            try? writeSummary(progress, failure: error.description)
            throw ExitCode.failure
        } catch {
            Terminal.error("run failed: \(error)")
            Terminal.error("progress before the failure: \(runner.currentSummary)")
            throw ExitCode.failure
        }
        Terminal.note(summary.description)
        try writeSummary(summary, failure: nil)
        if let warning = RejectReport(summary: summary).allRejectedWarning { Terminal.error(warning) }
        if let failOnRejectRatio, let line = RejectReport(summary: summary).exceeds(failOnRejectRatio) {
            Terminal.error(line)
            throw ExitCode.failure
        }
    }

    /// Writes `--summary-json`, with the reason a run stopped early under "failure".
    private func writeSummary(_ summary: RunSummary, failure: String?) throws {
        guard let summaryJson else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        var data = try encoder.encode(summary)
        if let failure, var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] {
            object["failure"] = failure
            data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        }
        try data.write(to: URL(fileURLWithPath: summaryJson))
    }
}

/// Turns SIGTERM/SIGINT into a graceful stop; a second signal or the timeout exits hard.
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    init(shutdownTimeout: Duration, onStop: @escaping @Sendable () async -> Void) {
        let queue = DispatchQueue(label: "signet.signals")
        let received = Mutex(0)
        sources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let count = received.withLock { $0 += 1; return $0 }
                if count > 1 {
                    Terminal.error("second signal: exiting now; uncommitted input will be read again")
                    Foundation.exit(130)
                }
                Terminal.note("signal \(number): draining in-flight records (up to \(shutdownTimeout))")
                Task { await onStop() }
                queue.asyncAfter(deadline: .now() + shutdownTimeout.seconds) {
                    Terminal.error("shutdown timeout passed: exiting; uncommitted input will be read again")
                    Foundation.exit(1)
                }
            }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
