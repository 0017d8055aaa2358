import AppStoreModels
import ArgumentParser
import Foundation
import Logging
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetCore
import SignetState

/// `signet reconcile`: runs a pipeline with the `appstore_statuses` source in place of its own,
/// which asks Apple for the current status of purchases (Get All Subscription Statuses), so
/// state that went wrong, or purchases Signet never saw, are put right with the same events as
/// any change.
struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Puts Signet's state in line with Apple's current view of purchases (Get All Subscription Statuses).",
        discussion: """
            For each purchase named, asks the App Store Server API for every subscription's current status (its latest signed transaction and renewal info) and runs each through the pipeline's own stages, store and sinks (the embedded default pipeline unless --pipeline names another): both JWS are verified like the webhook's, and the state machine applies them as Apple's view, ordered against notifications by their signedDate. Where Signet already agrees nothing happens; every difference (a renewal, a refund, a grace period Signet never heard of) gives the same entitlement-change events as a notification would (stdout for the default pipeline). Running it twice emits nothing the second time. It runs the pipeline with the appstore_statuses source in place of its own (a pipeline file can name that source too: docs/pipelines.md).

            --all reconciles every purchase in the state store (read first, read-only: --database, else PostgreSQL at $SIGNET_DATABASE_URL, else $SIGNET_DATA_DIR/signet.sqlite, the shipped pipelines' store), in order of original transaction id; an interrupted --all resumes after the last purchase done even when purchases arrived meanwhile. Use it when state may have drifted (after an outage longer than Apple's retries, or a bug fixed later).

            Seeding: purchases Signet never saw (subscribers from before Signet) are created from their status. Export their original transaction ids from your app's database, one per line, and pass the file with --file.

            It needs the In-App Purchase API key's variables, as `signet backfill` (see `signet help backfill`): SIGNET_APPSTORE_KEY_ID, SIGNET_APPSTORE_ISSUER_ID, SIGNET_APPSTORE_PRIVATE_KEY, SIGNET_BUNDLE_ID, SIGNET_ENVIRONMENT. Ids Apple does not know in that environment (4040010) are counted and skipped.

            Requests go out within the client's rate limit (40 a second Production, 4 Sandbox), several at once. Progress goes to stderr every few seconds (purchases done, statuses, unknown ids, rate, time left). How many ids are done is checkpointed in $SIGNET_DATA_DIR/reconcile.json: after kill -9, Ctrl-C or a failure, the same command with the same list resumes; --restart starts over.

            Examples:
              signet reconcile --original-transaction-id 2000000123456789
              signet reconcile --file purchases.txt >> events.ndjson
              signet reconcile --all
              signet reconcile --file purchases.txt --pipeline Pipelines/kafka.yaml
            """)

    @Option(name: .customLong("original-transaction-id"), help: "A purchase to reconcile (repeatable).")
    var originalTransactionIds: [String] = []

    @Option(name: .long, help: "A file of purchases to reconcile: one original transaction id per line (# comments allowed).")
    var file: String?

    @Flag(name: .long, help: "Every purchase in the state store (the shipped pipelines' store, or --database).")
    var all = false

    @OptionGroup var store: StoreOptions

    @Option(name: .long, help: "The pipeline file whose stages, store and sinks to use (default: the embedded Pipelines/stdin.yaml); its source is replaced.")
    var pipeline: String?

    @Flag(name: .long, help: "Discard an unfinished reconcile's checkpoint and start over.")
    var restart = false

    @Option(name: .long, help: .hidden)
    var progressInterval: Double = 5

    /// Ids `--all` reads from the store at a time (tests walk a small store in several pages).
    @Option(name: .long, help: .hidden)
    var pageSize = 10_000

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .warning

    @Option(name: .long, help: "Log format: text, or json (one object per line, for log shippers).")
    var logFormat: Terminal.LogFormat = .text

    func validate() throws {
        guard !originalTransactionIds.isEmpty || file != nil || all else {
            throw ValidationError("name the purchases: --original-transaction-id ID (repeatable), --file IDS, or --all")
        }
        guard !all || (originalTransactionIds.isEmpty && file == nil) else {
            throw ValidationError("--all reconciles every stored purchase: it takes no --original-transaction-id or --file")
        }
        guard progressInterval > 0 else { throw ValidationError("--progress-interval must be greater than 0") }
        guard pageSize > 0 else { throw ValidationError("--page-size must be greater than 0") }
    }

    func run() async throws {
        let (environment, api) = try CommandPipelineRun.startAPICommand("reconcile", logLevel: logLevel, logFormat: logFormat)
        // --all pages through the store as the run goes (read-only, beside the pipeline's own
        // connection): ten million ids would otherwise be a gigabyte of strings.
        var ids: [String] = []
        var storeReader: (any StoreRoles)?
        defer { try? storeReader?.close() }
        do {
            if all {
                let reader = try store.open()
                storeReader = reader
                guard try !reader.originalTransactionIds(after: nil, limit: 1).isEmpty else {
                    throw ConfigurationFailure(description: "signet reconcile: the list of purchases is empty (no purchase in \(store.location))")
                }
            } else {
                ids = try PurchaseIDList.read(explicit: originalTransactionIds, file: file)
                guard !ids.isEmpty else { throw ConfigurationFailure(description: "signet reconcile: the list of purchases is empty") }
            }
        } catch let failure as ConfigurationFailure {
            throw failure
        } catch {
            throw ConfigurationFailure(description: "signet reconcile: \(error)")
        }
        let text = try PipelineSourceText(pipeline)
        try text.checkDataDirectory()
        var built = try PipelineLoader.loadForCommand(text)
        let checkpointPath = CommandPipelineRun.dataFile("reconcile.json", environment: environment)
        if restart, FileManager.default.fileExists(atPath: checkpointPath) {
            try FileManager.default.removeItem(atPath: checkpointPath)
            Terminal.note("--restart: discarded the reconcile checkpoint \(checkpointPath)")
        }
        Terminal.note("reconciling \(all ? "every purchase in \(store.location)" : "\(ids.count) purchases") with \(api.baseURL) (\(api.environment.rawValue))")

        let logger = Logger(label: "signet.reconcile")
        let resources = built.resources.map(\.resource)
        var options = AppStoreStatusSource.Options(ids: ids, checkpointPath: checkpointPath)
        if let storeReader {
            options.idPages = PurchaseIDPages(pageSize: pageSize) { after, limit in
                try storeReader.originalTransactionIds(after: after, limit: limit)
            }
        }
        let source = AppStoreStatusSource(options: options, logger: logger) {
            // The budget is shared with every instance on the pipeline's PostgreSQL store, if it has one.
            AppStoreServerAPIClient(configuration: api, rateLimiter: .forPipeline(resources, logger: logger), logger: logger)
        }
        built.source = source
        let started = ContinuousClock.now
        @Sendable func line(_ summary: RunSummary) -> String {
            guard let progress = source.progress else { return "starting" }
            return progress.line(elapsed: (ContinuousClock.now - started).seconds) + ", \(summary.delivered) events"
        }
        let run = CommandPipelineRun(command: "reconcile", checkpointPath: checkpointPath, progressInterval: progressInterval)
        let summary = try await run.run(built, line: line)
        let finished = source.progress?.finished ?? false
        Terminal.note("\(finished ? "reconcile done" : "reconcile stopped; run the same command again to resume"): \(line(summary))")
        Terminal.note(summary.description)
        if let warning = RejectReport(summary: summary).allRejectedWarning { Terminal.error(warning) }
    }
}
