import ArgumentParser
import Dispatch
import Synchronization
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

            On SIGTERM or SIGINT Signet stops reading, delivers and commits what is in flight, and exits;
            a second signal, or --shutdown-timeout passing, exits at once (uncommitted input is read
            again on restart). A summary with counts per reason goes to stderr at the end.

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
        let loader = PipelineLoader(registry: Signet.makeRegistry(), environment: Terminal.environment)
        let built: Pipeline
        do {
            if let pipeline {
                built = try loader.load(file: pipeline)
            } else {
                built = try loader.load(yaml: Signet.defaultPipelineYAML, file: Signet.defaultPipelineName)
            }
        } catch {
            throw ConfigurationFailure(description: error.description)
        }

        let runner = PipelineRunner(pipeline: built)
        let admin: AdminServer?
        do {
            admin = try AdminServer.make(for: runner, environment: Terminal.environment)
        } catch {
            throw ConfigurationFailure(description: "\(error)")
        }
        let signals = SignalWatcher(shutdownTimeout: built.settings.shutdownTimeout) {
            await runner.requestStop()
        }
        defer { signals.cancel() }
        let summary: RunSummary
        do {
            if let admin { summary = try await admin.serve(beside: runner) } else { summary = try await runner.run() }
        } catch {
            Terminal.error("run failed: \(error)")
            Terminal.error("progress before the failure: \(runner.currentSummary)")
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
