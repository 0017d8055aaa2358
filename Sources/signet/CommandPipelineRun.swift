import ArgumentParser
import Foundation
import Logging
import SignetAppStoreAPI
import SignetCore
import SignetHTTP
import SignetState

/// Runs a pipeline whose source a command replaced (`signet backfill`, `reconcile`,
/// `dead-letters replay`): progress on stderr every few seconds instead of the runner's, a
/// drain on SIGINT/SIGTERM, and the failures mapped to one line and an exit status (2 for a
/// second writer, 1 for the rest, saying how to go on from what was committed).
struct CommandPipelineRun {
    /// The command's name in messages (`backfill`).
    var command: String
    /// How to go on after a failure (what was committed is kept).
    var resumeHint: String
    var progressInterval: Double

    /// A command that keeps its progress in a checkpoint file.
    init(command: String, checkpointPath: String, progressInterval: Double) {
        self.init(
            command: command, resumeHint: "what was committed is kept in \(checkpointPath): run the same command again to resume",
            progressInterval: progressInterval)
    }

    init(command: String, resumeHint: String, progressInterval: Double) {
        self.command = command
        self.resumeHint = resumeHint
        self.progressInterval = progressInterval
    }

    /// What a command that asks Apple's API does first: logging as asked, SIGPIPE ignored, and
    /// the API settings from the environment (a missing or invalid variable is one line naming it, exit 2).
    static func startAPICommand(
        _ command: String, logLevel: Logger.Level, logFormat: Terminal.LogFormat
    ) throws -> (environment: [String: String], api: AppStoreAPIConfiguration) {
        // A SIGTERM or Ctrl-C while the command loads drains once it runs, as with `signet run`
        // (nothing before the lifecycle awaits, so a caught signal is never left waiting).
        StartupSignals.catchUntilTheLifecycleStarts()
        Terminal.bootstrapLogging(level: logLevel, format: logFormat)
        signal(SIGPIPE, SIG_IGN)
        let environment = Terminal.environment
        do {
            return (environment, try AppStoreAPIConfiguration.fromEnvironment(environment))
        } catch {
            throw ConfigurationFailure(description: "signet \(command): \(error.message) (see `signet help \(command)`)")
        }
    }

    /// `name` in the data directory ($SIGNET_DATA_DIR, else signet-data).
    static func dataFile(_ name: String, environment: [String: String]) -> String {
        DataDirectory.file(name, environment: environment)
    }

    /// Runs `pipeline` to its end; `line` describes the progress given the runner's summary so far.
    func run(_ pipeline: Pipeline, line: @escaping @Sendable (RunSummary) -> String) async throws -> RunSummary {
        var pipeline = pipeline
        pipeline.settings.progressInterval = nil
        let runner = PipelineRunner(pipeline: pipeline)
        // At most a day: a huge --progress-interval must not overflow the conversion.
        let interval = Duration.milliseconds(Int64(min(progressInterval, 86_400) * 1000))
        let command = self.command
        let progress = Task {
            while (try? await Task.sleep(for: interval)) != nil { Terminal.note("\(command): \(line(runner.currentSummary))") }
        }
        defer { progress.cancel() }
        let outcome: PipelineService.Outcome
        do {
            outcome = try await PipelineLifecycle(runner: runner).run()
        } catch let error as StateStoreError where error.isInUse {
            throw ConfigurationFailure(description: "signet: \(error)")
        } catch let error as SinkError {
            Terminal.error("\(error.description) (\(runner.currentSummary.delivered) delivered before it)")
            throw ExitCode.failure
        } catch {
            Terminal.error("\(command) failed: \(error)")
            Terminal.error("\(line(runner.currentSummary)); \(resumeHint)")
            throw ExitCode.failure
        }
        progress.cancel()
        guard case .finished(let summary) = outcome else {
            Terminal.error("the drain did not finish within settings.shutdown_timeout; run the same command again to resume")
            throw ExitCode.failure
        }
        return summary
    }
}
