import AppStoreModels
import ArgumentParser
import Foundation
import Logging
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetCore
import SignetHTTP
import SignetState

/// `signet backfill`: runs a pipeline with the `appstore_history` source in place of its own, so
/// the notifications Apple sent in a window (Get Notification History) that Signet missed
/// produce their events now.
struct BackfillCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backfill",
        abstract: "Recovers the notifications Apple sent while Signet was away, from Apple's notification history.",
        discussion: """
            Asks the App Store Server API (Get Notification History) for every notification Apple sent in the window and runs each through the pipeline's own stages, store and sinks (the embedded default pipeline unless --pipeline names another): what was processed before is dropped by dedupe, so only what was missed produces events (stdout for the default pipeline; rejects in $SIGNET_DATA_DIR/dead-letter.ndjson). Running it twice emits nothing the second time. It runs the pipeline with the appstore_history source in place of its own (a pipeline file can name that source too: docs/pipelines.md).

            It needs an In-App Purchase API key. Create one in App Store Connect under Users and Access > Integrations > In-App Purchase (Generate API Key), download its .p8 file once, and note its key id and the issuer id shown above the list:
              SIGNET_APPSTORE_KEY_ID       the key id, e.g. 2X9R4HXF34
              SIGNET_APPSTORE_ISSUER_ID    the issuer id (a UUID)
              SIGNET_APPSTORE_PRIVATE_KEY  path to the .p8 file
              SIGNET_BUNDLE_ID             your app's bundle id
              SIGNET_ENVIRONMENT           Sandbox (default) or Production
                                           (Production also needs SIGNET_APP_APPLE_ID)
              SIGNET_APPSTORE_API_URL      another base URL (a proxy); default Apple's host

            The window: --since and --until take a duration before now (72h, 30d), an ISO-8601 date or date-time, or UNIX milliseconds; --until defaults to now. Apple keeps 180 days of history in Production and 30 in Sandbox: an older start is clamped, with a warning, before anything is fetched.

            The window is split into sub-windows fetched concurrently, all within the client's rate limit (40 requests/s Production, 4 Sandbox). Progress goes to stderr every few seconds (pages, notifications, new events, rate, time left). Pages are checkpointed in $SIGNET_DATA_DIR/backfill.json once every notification of them was committed: after kill -9, Ctrl-C or a failure, the same command resumes the unfinished backfill (its own window) where it stopped; --restart discards it. Ctrl-C (SIGINT) or SIGTERM stops after delivering and committing what is in flight.

            Examples:
              signet backfill --since 72h >> events.ndjson
              signet backfill --since 2026-10-01 --until 2026-10-15 --only-failures
              signet backfill --since 30d --pipeline Pipelines/kafka.yaml
            """)

    @Option(name: .long, help: "Where the window starts: 72h, 30d, an ISO-8601 date(-time), or UNIX ms.")
    var since: String

    @Option(name: .long, help: "Where the window ends (exclusive), in the same forms (default: now).")
    var until: String?

    @Option(name: .long, help: "The pipeline file whose stages, store and sinks to use (default: the embedded Pipelines/stdin.yaml); its source is replaced.")
    var pipeline: String?

    @Flag(name: .long, help: "Only notifications Apple never delivered successfully.")
    var onlyFailures = false

    @Flag(name: .long, help: "Discard an unfinished backfill's checkpoint and start this window afresh.")
    var restart = false

    @Option(name: .long, help: .hidden)
    var progressInterval: Double = 5

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .warning

    @Option(name: .long, help: "Log format: text, or json (one object per line, for log shippers).")
    var logFormat: Terminal.LogFormat = .text

    func validate() throws {
        let now = WallClock.milliseconds()
        guard AppStoreHistoryWindow.instant(since, now: now) != nil else {
            throw ValidationError("--since '\(since)' is not \(AppStoreHistoryWindow.instantForms)")
        }
        if let until, AppStoreHistoryWindow.instant(until, now: now) == nil {
            throw ValidationError("--until '\(until)' is not \(AppStoreHistoryWindow.instantForms)")
        }
        guard progressInterval > 0 else { throw ValidationError("--progress-interval must be greater than 0") }
    }

    func run() async throws {
        let (environment, api) = try CommandPipelineRun.startAPICommand("backfill", logLevel: logLevel, logFormat: logFormat)
        let text = try PipelineSourceText(pipeline)
        try text.checkDataDirectory()
        var built = try PipelineLoader.loadForCommand(text)
        let checkpointPath = CommandPipelineRun.dataFile("backfill.json", environment: environment)
        let window = try plannedWindow(api: api, checkpointPath: checkpointPath)

        var options = AppStoreHistorySource.Options(start: String(window.start), end: String(window.end), checkpointPath: checkpointPath)
        options.onlyFailures = onlyFailures
        let logger = Logger(label: "signet.backfill")
        let resources = built.resources.map(\.resource)
        let source = AppStoreHistorySource(options: options, logger: logger) {
            // The budget is shared with every instance on the pipeline's PostgreSQL store, if it has one.
            AppStoreServerAPIClient(configuration: api, rateLimiter: .forPipeline(resources, logger: logger), logger: logger)
        }
        built.source = source
        let started = ContinuousClock.now
        @Sendable func line(_ summary: RunSummary) -> String {
            guard let progress = source.progress else { return "starting, \(summary.delivered) new events" }
            return progress.line(newEvents: summary.delivered, elapsed: (ContinuousClock.now - started).seconds)
        }
        let run = CommandPipelineRun(command: "backfill", checkpointPath: checkpointPath, progressInterval: progressInterval)
        let summary = try await run.run(built, line: line)
        let finished = source.progress?.finished ?? false
        Terminal.note("\(finished ? "backfill done" : "backfill stopped; run the same command again to resume"): \(line(summary))")
        Terminal.note(summary.description)
        if let warning = RejectReport(summary: summary).allRejectedWarning { Terminal.error(warning) }
    }

    /// The window to backfill: an unfinished checkpoint's (said on stderr), else `--since`
    /// ..< `--until` clamped to Apple's lookback (with a warning).
    private func plannedWindow(api: AppStoreAPIConfiguration, checkpointPath: String) throws -> AppStoreHistoryWindow {
        if restart, FileManager.default.fileExists(atPath: checkpointPath) {
            try FileManager.default.removeItem(atPath: checkpointPath)
            Terminal.note("--restart: discarded the backfill checkpoint \(checkpointPath)")
        }
        let plan: AppStoreHistoryPlan
        do {
            plan = try AppStoreHistoryPlan.make(
                checkpointPath: checkpointPath, start: since, end: until, onlyFailures: onlyFailures,
                subWindows: AppStoreHistorySource.Options.defaultSubWindows,
                configuration: api, now: WallClock.milliseconds())
        } catch {
            throw ConfigurationFailure(description: "signet backfill: \(error)")
        }
        let window = plan.checkpoint.window
        if plan.resumed {
            let saved = plan.checkpoint
            Terminal.note(
                "resuming the unfinished backfill of \(saved.window)\(saved.onlyFailures ? " (only failures)" : ""): "
                    + "\(saved.pages) pages, \(saved.notifications) notifications done (--restart discards it)")
            return window
        }
        if let warning = plan.clampWarning(configuration: api) { Terminal.error("warning: \(warning)") }
        Terminal.note("backfilling \(window)\(onlyFailures ? " (only failures)" : "") from \(api.baseURL)")
        return window
    }
}
