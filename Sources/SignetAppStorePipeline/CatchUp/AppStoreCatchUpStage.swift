import AppStoreModels
import Foundation
public import Logging
public import SignetAppStoreAPI
public import SignetCore
import Synchronization

/// Catches up by itself on what Apple could not deliver: every `interval` it asks Get
/// Notification History for the notifications of the recent window whose delivery failed
/// (`onlyFailures`), and feeds each into the pipeline as the record the webhook would have
/// received, so decode, verify, dedupe and transition treat it like any notification. What
/// was processed before (Apple's own retry got through) is dropped by dedupe.
///
/// Put it first in `stages:` of a service pipeline (webhook, Kafka); its records pass through
/// every later stage. The first sweep covers `window` back from the start; each later one
/// starts `overlap` before the previous successful sweep began, so a notification whose failed
/// attempt Apple recorded late is still seen. Nothing is checkpointed: records fetched but not
/// committed when the process stops are fetched again by the first sweep of the next run.
/// A failed sweep (Apple unreachable, a 401) is logged and counted; the next one covers its
/// window too. The webhook's own work never waits for a sweep: pages are fetched in a task of
/// their own, and the runner takes what arrived between batches (``tick()``).
public final class AppStoreCatchUpStage: TickingStage {
    public struct Options: Sendable {
        /// Time between sweeps; zero turns the stage into a pass-through that calls no API.
        public var interval: Duration = .seconds(3600)
        /// How far back the first sweep of a run looks.
        public var window: Duration = .seconds(7 * 86_400)
        /// How far before the previous successful sweep's start the next one begins.
        public var overlap: Duration = .seconds(3600)
        /// Only notifications Apple never delivered successfully.
        public var onlyFailures = true

        public init() {}
    }

    public let name = "appstore_catch_up"
    public let options: Options
    private let makeClient: @Sendable () throws -> AppStoreServerAPIClient
    private let logger: Logger
    private let metrics: AppStoreCatchUpMetrics
    /// Pages fetched and not yet handed to the pipeline; small, so a slow pipeline holds back
    /// the fetching instead of filling memory.
    private let buffer = RecordQueue<AppStoreHistorySource.HistoryPage>(capacity: 16)
    private let state = Mutex(State())

    private let sweeps = BackgroundSweeps()

    private struct State {
        var nextOffset: Int64 = 0
        var tallies: [Int: SweepTally] = [:]
        /// When the last successful sweep began (the next starts `overlap` before it).
        var previousStart: Int64?
        var sweepNumber = 0
    }

    /// One sweep's figures, logged once all its notifications were committed.
    private struct SweepTally {
        var window: String
        var found = 0
        var fetched = false
        var recovered = 0
        var duplicates = 0
        var rejected = 0
        var settled: Int { recovered + duplicates + rejected }
    }

    /// Marks the records a sweep produced (its number), so ``acknowledge(_:)`` can count them.
    enum SweepPart: RecordPartKey {
        typealias Value = Int
    }

    /// - Parameters:
    ///   - makeClient: builds the API client when the stage opens (so loading or
    ///     linting a pipeline needs no credentials); the stage shuts it down when it closes.
    ///   - options: the component's settings (its `Options`); the defaults fit most uses.
    ///   - logger: where it logs what it does and what fails.
    public init(
        options: Options, logger: Logger = Logger(label: "signet.appstore-catch-up"),
        makeClient: @escaping @Sendable () throws -> AppStoreServerAPIClient
    ) {
        self.options = options
        self.logger = logger
        self.makeClient = makeClient
        self.metrics = AppStoreCatchUpMetrics()
    }

    private var enabled: Bool { options.interval > .zero }

    /// How often the runner asks for what was fetched: often enough to pass Apple's full rate
    /// (a page of 20 every 25 ms) through the buffer.
    public var tickInterval: Duration? { enabled ? .milliseconds(200) : nil }

    public func open() async throws {
        guard enabled else {
            logger.info("appstore_catch_up: interval is 0s; no catch-up sweeps")
            return
        }
        try sweeps.start(
            stage: name, interval: options.interval, makeClient: makeClient,
            announce: { [logger, options] configuration in
                logger.info(
                    "catch-up sweeps every \(ConfigDuration.format(options.interval)) for notifications Apple could not deliver (\(configuration.environment.rawValue), \(configuration.credentials.bundleId); first sweep looks back \(ConfigDuration.format(options.window)))"
                )
            },
            sweep: { [self] client in await sweep(client: client) })
    }

    /// One sweep; false when the stage is closing.
    private func sweep(client: AppStoreServerAPIClient) async -> Bool {
        let now = WallClock.milliseconds()
        let earliest = now - options.window.clampedMilliseconds
        let (start, number) = state.withLock { state in
            state.sweepNumber += 1
            return (state.previousStart.map { max(earliest, $0 - options.overlap.clampedMilliseconds) } ?? earliest, state.sweepNumber)
        }
        let request = NotificationHistoryRequest(startDate: start, endDate: now, onlyFailures: options.onlyFailures ? true : nil)
        let window = AppStoreHistoryWindow(start: start, end: now).description
        state.withLock { $0.tallies[number] = SweepTally(window: window) }
        do {
            var pages = 0
            for try await page in client.notificationHistory(request) {
                pages += 1
                state.withLock { $0.tallies[number]?.found += page.items.count }
                metrics.fetched(page.items.count)
                guard await buffer.send(AppStoreHistorySource.HistoryPage(subWindow: number, page: page)) else { return false }
            }
            state.withLock { $0.previousStart = now }
            metrics.sweepSucceeded(at: now)
            let found = finishFetching(number)
            logger.info("catch-up sweep of \(window): \(found) notifications in \(pages) pages")
        } catch is CancellationError {
            return false
        } catch {
            if Task.isCancelled { return false }
            metrics.sweepFailed()
            _ = finishFetching(number)
            logger.warning(
                "catch-up sweep of \(window) failed: \(error); the next sweep, in \(ConfigDuration.format(options.interval)), covers this window too")
        }
        return true
    }

    /// Marks sweep `number` as fully fetched; returns how many notifications it found.
    private func finishFetching(_ number: Int) -> Int {
        let (found, done) = state.withLock { state -> (Int, SweepTally?) in
            state.tallies[number]?.fetched = true
            return (state.tallies[number]?.found ?? 0, settle(&state, number))
        }
        if let done { report(done) }
        return found
    }

    /// Removes and returns sweep `number`'s tally once it was fetched and every record of it committed.
    private func settle(_ state: inout State, _ number: Int) -> SweepTally? {
        guard let tally = state.tallies[number], tally.fetched, tally.settled >= tally.found else { return nil }
        state.tallies[number] = nil
        return tally
    }

    private func report(_ tally: SweepTally) {
        guard tally.found > 0 else { return }
        let level: Logger.Level = tally.recovered > 0 ? .notice : .info
        logger.log(
            level: level,
            "catch-up of \(tally.window): \(tally.recovered) recovered, \(tally.duplicates) dropped (processed before), \(tally.rejected) rejected (dead-lettered)")
    }

    public func process(_ batch: inout RecordBatch) async throws {}

    public func tick() async throws -> RecordBatch? {
        var records: [Record] = []
        for fetched in buffer.poll() {
            let items = fetched.page.items
            let first = state.withLock { state in
                defer { state.nextOffset += Int64(items.count) }
                return state.nextOffset
            }
            for (index, item) in items.enumerated() {
                var record = Record(
                    raw: AppStoreHistorySource.envelope(item.signedPayload),
                    position: SourcePosition(stream: "appstore-catch-up", offset: first + Int64(index)))
                record[SweepPart.self] = fetched.subWindow
                records.append(record)
            }
        }
        return records.isEmpty ? nil : RecordBatch(records: records)
    }

    /// Counts what became of the sweeps' records, now that they are committed.
    public func acknowledge(_ batch: RecordBatch) async throws {
        var outcomes: [Int: (recovered: Int, duplicates: Int, rejected: Int)] = [:]
        for record in batch.records {
            guard let number = record[SweepPart.self] else { continue }
            switch record.status {
            case .active: outcomes[number, default: (0, 0, 0)].recovered += 1
            case .dropped: outcomes[number, default: (0, 0, 0)].duplicates += 1
            case .rejected: outcomes[number, default: (0, 0, 0)].rejected += 1
            }
        }
        guard !outcomes.isEmpty else { return }
        let done = state.withLock { state -> [SweepTally] in
            var done: [SweepTally] = []
            for (number, counts) in outcomes {
                state.tallies[number]?.recovered += counts.recovered
                state.tallies[number]?.duplicates += counts.duplicates
                state.tallies[number]?.rejected += counts.rejected
                if let tally = settle(&state, number) { done.append(tally) }
            }
            return done
        }
        for counts in outcomes.values { metrics.settled(counts) }
        done.forEach(report)
    }

    public func close() async throws {
        buffer.stop()
        try await sweeps.stop()
    }
}
