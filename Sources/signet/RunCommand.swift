import ArgumentParser
import Foundation
import Logging
import Signet
import SignetCore
import SignetHTTP

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Runs a pipeline until its input ends or SIGTERM/SIGINT arrives.",
        discussion: """
            Without --pipeline, runs the embedded default (Pipelines/stdin.yaml): NDJSON notifications on
            stdin, verified documents on stdout, rejects in $SIGNET_DATA_DIR/dead-letter.ndjson. It needs
            SIGNET_BUNDLE_ID and SIGNET_ENVIRONMENT (and SIGNET_APP_APPLE_ID for Production).

            On SIGTERM or SIGINT Signet stops reading (an http source answers 503 with Retry-After),
            delivers and commits what is in flight, and exits 0; if that takes longer than the pipeline's
            settings.shutdown_timeout (default 20s) it exits 1 (uncommitted input is read again on
            restart). A summary with counts per reason goes to stderr at the end.

            Examples:
              SIGNET_BUNDLE_ID=com.example SIGNET_ENVIRONMENT=Sandbox signet run < notifications.ndjson
              signet run --pipeline Pipelines/kafka.yaml
            """)

    @Option(name: .long, help: "The pipeline file (default: the embedded Pipelines/stdin.yaml).")
    var pipeline: String?

    @Option(name: .long, help: "Write the run summary as JSON to this file.")
    var summaryJson: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(name: .long, help: "Log format: text, or json (one object per line, for log shippers).")
    var logFormat: Terminal.LogFormat = .text

    func run() async throws {
        Terminal.bootstrapLogging(level: logLevel, format: logFormat)
        PrometheusBackend.bootstrap()
        signal(SIGPIPE, SIG_IGN)
        let built = try PipelineLoader.loadForCommand(pipeline)

        let runner = PipelineRunner(pipeline: built)
        let admin: AdminServer?
        do {
            admin = try AdminServer.make(for: runner, environment: Terminal.environment)
        } catch {
            throw ConfigurationFailure(description: "\(error)")
        }
        // SIGTERM/SIGINT drain through ServiceLifecycle (SignetHTTP.PipelineLifecycle); the admin
        // listener stops after the pipeline, so /readyz says "draining" meanwhile.
        let outcome: PipelineService.Outcome
        do {
            outcome = try await PipelineLifecycle(runner: runner, services: admin.map { [$0] } ?? []).run()
        } catch {
            Terminal.error("run failed: \(error)")
            Terminal.error("progress before the failure: \(runner.currentSummary)")
            throw ExitCode.failure
        }
        guard case .finished(let summary) = outcome else {
            Terminal.error("shutdown timeout passed: exiting; uncommitted input will be read again")
            Terminal.error("progress: \(runner.currentSummary)")
            throw ExitCode.failure
        }
        Terminal.note(summary.description)
        if let summaryJson {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(summary).write(to: URL(fileURLWithPath: summaryJson))
        }
    }
}
