import ArgumentParser
import Foundation
import Logging
import Signet
import SignetState
import SignetCore
import SignetHTTP

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Runs a pipeline until its input ends or SIGTERM/SIGINT arrives.",
        discussion: """
            Without --pipeline, runs the embedded default (Pipelines/stdin.yaml): NDJSON notifications on stdin, one entitlement-change event per line on stdout for every change of access, rejects in $SIGNET_DATA_DIR/dead-letter.ndjson. It needs SIGNET_BUNDLE_ID; SIGNET_ENVIRONMENT is Sandbox unless set (Production also needs SIGNET_APP_APPLE_ID).

            One writer per SQLite state database: the store locks its file when it opens (DATABASE.lock beside it), so a second `signet run` on the same database exits with status 2 ("in use by pid N"); readers such as `signet entitlements` stay allowed. $SIGNET_DATA_DIR, when set, must be a writable directory (it is created when only its last part is missing).

            On SIGTERM or SIGINT Signet stops reading, delivers and commits what is in flight, and exits 0; an http source answers 503 with Retry-After meanwhile. If that takes longer than the pipeline's settings.shutdown_timeout (default 20s) it exits 1 (uncommitted input is read again on restart). A closed stdout (`| head`) stops the run at once with exit 1; nothing past what was written is committed. A summary with counts per reason goes to stderr at the end, and a warning when every record was rejected.

            Examples:
              SIGNET_BUNDLE_ID=com.example signet run < notifications.ndjson
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

    @Option(name: .long, help: "Log format: text, or json (one object per line, for log shippers).")
    var logFormat: Terminal.LogFormat = .text

    func validate() throws {
        if let failOnRejectRatio, !(0...1).contains(failOnRejectRatio) {
            throw ValidationError("--fail-on-reject-ratio must be between 0 and 1, got \(failOnRejectRatio)")
        }
    }

    func run() async throws {
        // A SIGTERM while the pipeline loads drains once it runs, as one a moment later would.
        StartupSignals.catchUntilTheLifecycleStarts()
        Terminal.bootstrapLogging(level: logLevel, format: logFormat)
        let files = DescriptorLimit.raiseToHardLimit()
        PrometheusBackend.bootstrap()
        PrometheusBackend.recordBuildInfo(version: Signet.version)
        signal(SIGPIPE, SIG_IGN)
        let built: Pipeline
        let runner: PipelineRunner
        let admin: AdminServer?
        do {
            let source = try PipelineSourceText(pipeline)
            // Checked before the pipeline opens anything in it.
            try source.checkDataDirectory()
            built = try PipelineLoader.loadForCommand(source)
            runner = PipelineRunner(pipeline: built)
            do {
                try HTTPSource.serveRetention(of: built, environment: Terminal.environment, logger: Logger(label: "signet.retention"))
                admin = try AdminServer.make(for: runner, environment: Terminal.environment)
            } catch {
                throw ConfigurationFailure(description: "\(error)")
            }
        } catch {
            // A run that never started leaves its --summary-json too, with the reason.
            try? writeSummary(RunSummary(), failure: "\(error)")
            throw error
        }
        // Only listeners spend descriptors on strangers: say what they may use.
        if let files, admin != nil || built.source is HTTPSource {
            Logger(label: "signet").info(
                "open files limit: \(files.after)\(files.after > files.before ? " (raised from \(files.before))" : "")")
        }
        // SIGTERM/SIGINT drain through ServiceLifecycle (SignetHTTP.PipelineLifecycle); the admin
        // listener stops after the pipeline, so /readyz says "draining" meanwhile.
        let outcome: PipelineService.Outcome
        do {
            outcome = try await PipelineLifecycle(runner: runner, services: admin.map { [$0] } ?? []).run()
        } catch let error as StateStoreError where error.isInUse {
            // A second writer: a usage problem (exit 2), like a wrong setting.
            try? writeSummary(runner.currentSummary, failure: error.description)
            throw ConfigurationFailure(description: "signet: \(error)")
        } catch let error as ConfigError {
            // A setting only a component's open could check (a catch-up stage without its API key).
            try? writeSummary(runner.currentSummary, failure: error.description)
            throw ConfigurationFailure(description: "signet: \(error)")
        } catch let error as UncommittedPositions {
            // Everything ran, but finished work stayed uncommitted: not a clean stop.
            Terminal.error("signet: \(error)")
            Terminal.error("progress: \(runner.currentSummary)")
            try? writeSummary(runner.currentSummary, failure: error.description, uncommitted: error.positions)
            throw ExitCode.failure
        } catch let error as SinkError {
            try failInOneLine(error.description, runner: runner)
        } catch let error as SQLiteError where error.isDiskFull {
            try failInOneLine(error.description, runner: runner)
        } catch {
            Terminal.error("run failed: \(error)")
            Terminal.error("progress before the failure: \(runner.currentSummary)")
            try? writeSummary(runner.currentSummary, failure: "\(error)")
            throw ExitCode.failure
        }
        guard case .finished(let summary) = outcome else {
            let limit = ConfigDuration.format(runner.pipeline.settings.shutdownTimeout)
            let failure = "the drain did not finish within settings.shutdown_timeout (\(limit)); uncommitted input will be read again"
            Terminal.error("\(failure): exiting 1")
            Terminal.error("progress: \(runner.currentSummary)")
            try? writeSummary(runner.currentSummary, failure: failure)
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

    /// One line a user can act on (closed stdout, full disk), with the progress so far; exit 1.
    private func failInOneLine(_ failure: String, runner: PipelineRunner) throws -> Never {
        let progress = runner.currentSummary
        Terminal.error("\(failure) (\(progress.read) read, \(progress.delivered) delivered before it)")
        try? writeSummary(progress, failure: failure)
        throw ExitCode.failure
    }

    /// Writes `--summary-json`, with the reason a run stopped early under "failure" and the
    /// positions a source could not commit under "uncommitted".
    private func writeSummary(_ summary: RunSummary, failure: String?, uncommitted: [String: Int64] = [:]) throws {
        guard let summaryJson else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        var data = try encoder.encode(summary)
        if let failure, var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] {
            object["failure"] = failure
            if !uncommitted.isEmpty { object["uncommitted"] = uncommitted }
            data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        }
        try data.write(to: URL(fileURLWithPath: summaryJson))
    }
}
