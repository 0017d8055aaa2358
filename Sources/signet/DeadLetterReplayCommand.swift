import ArgumentParser
import Foundation
import Logging
import SignetCore
import SignetHTTP

/// `signet dead-letters replay FILE...`
struct DeadLetterReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Runs the inputs that dead letters kept through a pipeline again, after the configuration was fixed.",
        discussion: """
            Each distinct kept input runs once (repeats of the same input are skipped), through the stages, store and sinks of the pipeline (the embedded default unless --pipeline names another; its source is replaced). What verifies now is processed like any input: dedupe drops what was already processed, so replaying twice changes nothing the second time. What still fails is dead-lettered again, with the same id, and counted by reason; the command then exits 1. The dead-letter files are read whole before the run, so the pipeline may append to the file being replayed.

            A running pipeline keeps its store to itself: replay into it through its webhook instead (--webhook), which answers each input with what became of it.

            Examples:
              signet dead-letters replay dead-letter.ndjson
              signet dead-letters replay dl.ndjson --reason bundle_id_mismatch \\
                --pipeline Pipelines/kafka.yaml
              signet dead-letters replay dl.ndjson \\
                --webhook http://127.0.0.1:8080/notifications
            """)

    @Argument(help: "Dead-letter files (json format).")
    var files: [String]

    @Option(name: .long, help: "Replay only dead letters of this reason (repeatable), e.g. bundle_id_mismatch (docs/reason-codes.md).")
    var reason: [String] = []

    @Option(name: .long, help: "The pipeline file whose stages, store and sinks to use (default: the embedded Pipelines/stdin.yaml).")
    var pipeline: String?

    @Option(name: .long, help: "Post each input to this running webhook instead of running a pipeline here.")
    var webhook: String?

    @Option(name: .long, help: "With --webhook: seconds one input may keep meeting 503, 429 or no connection before it is counted without an answer.")
    var patience: Double = 30

    @Option(name: .long, help: .hidden)
    var progressInterval: Double = 5

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .warning

    func validate() throws {
        if webhook != nil, pipeline != nil {
            throw ValidationError("--webhook posts to a running pipeline: --pipeline is for replaying here, give one of them")
        }
        if let webhook, URL(string: webhook)?.scheme.map({ ["http", "https"].contains($0) }) != true {
            throw ValidationError("--webhook '\(webhook)' is not an http(s) URL")
        }
        guard (0...86_400).contains(patience) else { throw ValidationError("--patience must be 0 to 86400 seconds") }
        guard progressInterval > 0 else { throw ValidationError("--progress-interval must be greater than 0") }
    }

    func run() async throws {
        Terminal.bootstrapLogging(level: logLevel, format: .text)
        signal(SIGPIPE, SIG_IGN)
        let (read, unreadable) = try DeadLettersCommand.read(files)
        for line in unreadable.prefix(10) { Terminal.error("skipped, not a dead-letter record: \(line)") }
        let plan = DeadLetterReplayPlan(read, reasons: Set(reason))
        Terminal.note(plan.description)
        guard !plan.records.isEmpty else { return }
        let outcome: DeadLetterReplayOutcome
        if let webhook {
            outcome = try await WebhookReplayClient(url: webhook, patience: .milliseconds(Int64(patience * 1000))).post(plan.records)
        } else {
            outcome = try await replayHere(plan.records)
        }
        Terminal.note(outcome.description)
        if outcome.refusedAgain > 0 || !outcome.unanswered.isEmpty { throw ExitCode.failure }
    }

    private func replayHere(_ records: [Record]) async throws -> DeadLetterReplayOutcome {
        let text = try PipelineSourceText(pipeline)
        try text.checkDataDirectory()
        var built = try PipelineLoader.loadForCommand(text)
        built.source = RecordListSource(records: records)
        let total = records.count
        let run = CommandPipelineRun(
            command: "dead-letters replay",
            resumeHint: "replay again: what was committed is dropped as a duplicate", progressInterval: progressInterval)
        let summary = try await run.run(built) { "\($0.read) of \(total) inputs replayed, \($0.delivered) events" }
        return DeadLetterReplayOutcome(summary)
    }
}
