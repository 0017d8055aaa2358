import AppStoreModels
import Foundation
public import Logging
public import SignetAppStoreAPI
public import SignetCore

/// A source of the notifications Apple sent in a window, read back from Get Notification
/// History: each item becomes the record a webhook would have received,
/// `{"signedPayload": "..."}`, so the pipeline's own decode, verify, dedupe, transition and
/// sinks handle it, and what was processed before is dropped by dedupe.
///
/// The window is split into sub-windows (Apple's pages of one window come one after the
/// other), fetched by `parallelism` tasks at once through one client, so all of them share
/// its rate limit. Each sub-window is a stream of its own (`appstore-history/N`); a page is
/// recorded in the checkpoint (`AppStoreHistoryCheckpoint`) only once the runner committed every
/// record of it, and a restart resumes every sub-window after its last recorded page. A
/// checkpoint whose sub-windows are all done is finished: the next open starts the
/// configured window afresh.
public final class AppStoreHistorySource: Source {
    public struct Options: Sendable {
        /// Where the window starts and ends, as `AppStoreHistoryWindow/instant(_:now:)` reads them
        /// (`72h`, an ISO-8601 date, UNIX ms); `end` nil is now. Used when no unfinished
        /// checkpoint exists.
        public var start: String
        public var end: String?
        /// Only notifications Apple never delivered successfully (`onlyFailures`).
        public var onlyFailures = false
        /// Sub-windows the window is split into.
        public var subWindows = Options.defaultSubWindows
        /// The default of ``subWindows``, for a caller planning the same window (`signet backfill`).
        public static let defaultSubWindows = 16
        /// Sub-windows fetched at the same time.
        public var parallelism = 4
        /// The checkpoint file.
        public var checkpointPath: String
        /// How long a batch waits for more pages once it has one: pages arrive one every
        /// 1/rate s, and a batch of one page costs the pipeline a commit (an fsync) per 20
        /// notifications. Latency does not matter here; commits do.
        public var batchLinger: Duration = .milliseconds(250)
        /// The least time between two checkpoint writes (each a write, fsync and rename): a
        /// crash then fetches at most this much more again, and dedupe drops the repeats.
        /// Zero writes after every page.
        public var checkpointInterval: Duration = .seconds(1)

        public init(start: String, end: String? = nil, checkpointPath: String) {
            self.start = start
            self.end = end
            self.checkpointPath = checkpointPath
        }
    }

    /// One page and the sub-window it belongs to.
    struct HistoryPage: Sendable {
        var subWindow: Int
        var page: NotificationHistoryPage
    }

    /// Notifications in a full page of Get Notification History (Apple's page size).
    static let pageSize = 20

    /// The stream name of sub-window `index` in record positions.
    package static func streamName(_ index: Int) -> String { "appstore-history/\(index)" }

    public let options: Options
    private let logger: Logger
    /// The client, the buffer, the checkpoint writer, the fetcher and ``State``.
    private let core: FetchingSourceCore<HistoryPage, State, AppStoreHistoryCheckpoint>

    /// A page handed to the runner whose records are not all committed yet.
    private struct PendingPage {
        var lastOffset: Int64
        var request: NotificationHistoryRequest
        var nextPaginationToken: String?
        var notifications: Int
        var coveredUntil: Int64?
    }

    private struct Stream {
        var nextOffset: Int64 = 0
        var committedOffset: Int64 = -1
        var pending: [PendingPage] = []
        /// How far the fetched (not necessarily committed) pages reach, for progress.
        var fetchedCovered: Int64 = 0
    }

    private struct State {
        var checkpoint: AppStoreHistoryCheckpoint?
        var streams: [Stream] = []
        var resumed = false
        var pagesAtStart = 0
        var notificationsAtStart = 0
        var coveredAtStart: Int64 = 0
        var pagesFetched = 0
        var notificationsFetched = 0
        /// Sub-windows no fetcher has taken yet.
        var unclaimed: [Int] = []
    }

    /// - Parameters:
    ///   - makeClient: builds the API client when the source opens (so loading or
    ///     linting a pipeline needs no credentials); the source shuts it down when it closes.
    ///   - options: the component's settings (its `Options`); the defaults fit most uses.
    ///   - logger: where it logs what it does and what fails.
    public init(
        options: Options, logger: Logger = Logger(label: "signet.appstore-history"),
        makeClient: @escaping @Sendable () throws -> AppStoreServerAPIClient
    ) {
        self.options = options
        self.logger = logger
        self.core = FetchingSourceCore(
            name: "appstore_history", makeClient: makeClient, state: State(), checkpoint: \.checkpoint,
            checkpointPath: options.checkpointPath, checkpointInterval: options.checkpointInterval, label: "signet.appstore-history",
            write: { checkpoint, path in try checkpoint.save(to: path) }, bufferCapacity: max(2, 2 * options.parallelism),
            batchLinger: options.batchLinger)
    }

    /// Progress so far (safe to call while running).
    package var progress: AppStoreHistoryProgress? {
        core.withState { state in
            guard let checkpoint = state.checkpoint else { return nil }
            var covered: Int64 = 0
            for (index, sub) in checkpoint.subWindows.enumerated() {
                covered += max(sub.coveredMilliseconds, state.streams[index].fetchedCovered)
            }
            return AppStoreHistoryProgress(
                window: checkpoint.window, resumed: state.resumed, pagesAtStart: state.pagesAtStart,
                notificationsAtStart: state.notificationsAtStart, pagesFetched: state.pagesFetched,
                notificationsFetched: state.notificationsFetched, pagesCommitted: checkpoint.pages,
                coveredAtStart: state.coveredAtStart, covered: covered, finished: checkpoint.isFinished)
        }
    }

    // MARK: - Source

    public func open() async throws {
        let now = WallClock.milliseconds()
        let (client, checkpoint) = try await core.open { [self] client in
            try core.createCheckpointFolder()
            return try startingCheckpoint(client: client, now: now)
        }
        let resumed = checkpoint.pages > 0 || checkpoint.subWindows.contains(where: \.done)
        core.withState { state in
            state.checkpoint = checkpoint
            state.streams = Array(repeating: Stream(), count: checkpoint.subWindows.count)
            state.resumed = resumed
            state.pagesAtStart = checkpoint.pages
            state.notificationsAtStart = checkpoint.notifications
            state.coveredAtStart = checkpoint.coveredMilliseconds
            state.unclaimed = checkpoint.subWindows.indices.filter { !checkpoint.subWindows[$0].done }
        }
        // Every unfinished sub-window, `parallelism` at a time.
        try await core.startFetching(
            workers: min(options.parallelism, checkpoint.subWindows.count),
            claim: { [self] in core.withState { $0.unclaimed.isEmpty ? nil : $0.unclaimed.removeFirst() } },
            fetch: { [self] index in try await fetch(subWindow: index, checkpoint.subWindows[index], client: client) })
    }

    /// The unfinished checkpoint to resume, or a new one for the configured window.
    private func startingCheckpoint(client: AppStoreServerAPIClient, now: Int64) throws -> AppStoreHistoryCheckpoint {
        let plan: AppStoreHistoryPlan
        do {
            plan = try AppStoreHistoryPlan.make(
                checkpointPath: options.checkpointPath, start: options.start, end: options.end, onlyFailures: options.onlyFailures,
                subWindows: options.subWindows, configuration: client.configuration, now: now)
        } catch let error as SourceError {
            throw SourceError("appstore_history: \(error.description)")
        }
        let saved = plan.checkpoint
        if plan.resumed {
            logger.notice(
                "resuming the unfinished backfill of \(saved.window) (\(saved.pages) pages, \(saved.notifications) notifications done)")
        }
        if let warning = plan.clampWarning(configuration: client.configuration) { logger.warning("\(warning)") }
        return saved
    }

    /// Pages through sub-window `index` from where `sub` left off. False once the source stopped.
    private func fetch(subWindow index: Int, _ sub: AppStoreHistoryCheckpoint.SubWindow, client: AppStoreServerAPIClient) async throws -> Bool {
        do {
            for try await page in client.notificationHistory(sub.request, resumingAfter: sub.paginationToken) {
                guard await core.send(.init(subWindow: index, page: page)) else { return false }
            }
        } catch let error as AppStoreAPIError where error.isStartDateTooFarInPast {
            // Done without its pages only when Apple can have nothing of it any
            // more: the part ends before the lookback's edge. Anything else (the
            // client's clamps ran out, the clocks disagree) stops the run; the
            // checkpoint keeps what was committed, and the next run resumes.
            let part = AppStoreHistoryWindow(start: sub.request.startDate, end: sub.request.endDate)
            let lookback = NotificationHistoryLookback(environment: client.configuration.environment)
            guard lookback.verdict(start: part.start, end: part.end, now: WallClock.milliseconds()) == .gone else {
                throw SourceError(
                    "appstore_history: part \(index) of the backfill (\(part)) ends inside Apple's lookback (\(lookback.days) days in \(client.configuration.environment.rawValue)), but Apple refused its start as too old (4000012) and it cannot be clamped further (at most \(NotificationHistoryLookback.maximumClamps) clamps, never into its last \(NotificationHistoryLookback.minimumSpan / 60_000) minutes); nothing of it was recorded as done: run the backfill again to resume (check this machine's clock if it happens again)")
            }
            logger.warning(
                "part \(index) of the backfill (\(part)) now lies entirely beyond Apple's lookback: skipped, Apple no longer has its notifications")
            let gone = NotificationHistoryPage(
                items: [], request: sub.request, paginationToken: sub.paginationToken, nextPaginationToken: nil,
                hasMore: false, restartedWindow: nil)
            guard await core.send(.init(subWindow: index, page: gone)) else { return false }
        }
        return true
    }

    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        try await core.nextBatch(maxRecords: maxRecords, recordsPerAnswer: Self.pageSize, accept: accept)
    }

    /// Turns a fetched page into records with positions, and remembers the page until they commit.
    /// Returns the records and whether the checkpoint advanced (an empty page).
    private func accept(_ fetched: HistoryPage) -> ([Record], Bool) {
        let page = fetched.page
        let stream = Self.streamName(fetched.subWindow)
        // Apple's dates, kept inside the page's window: any value (Int64.min, say) stays harmless
        // in the progress arithmetic below and in the checkpoint.
        let coveredUntil = page.items.compactMap { $0.sendAttempts.first?.attemptDate }.max()
            .map { min(max($0, page.request.startDate), page.request.endDate) }
        return core.withState { state in
            var records: [Record] = []
            records.reserveCapacity(page.items.count)
            var offset = state.streams[fetched.subWindow].nextOffset
            for item in page.items {
                records.append(Record(raw: Self.envelope(item.signedPayload), position: SourcePosition(stream: stream, offset: offset)))
                offset += 1
            }
            state.streams[fetched.subWindow].nextOffset = offset
            state.streams[fetched.subWindow].pending.append(PendingPage(
                lastOffset: offset - 1, request: page.request, nextPaginationToken: page.nextPaginationToken,
                notifications: page.items.count, coveredUntil: coveredUntil))
            let span = page.request.endDate - page.request.startDate
            let reach = page.nextPaginationToken == nil ? span : min(span, max(0, (coveredUntil ?? page.request.startDate) - page.request.startDate))
            state.streams[fetched.subWindow].fetchedCovered = max(state.streams[fetched.subWindow].fetchedCovered, reach)
            state.pagesFetched += 1
            state.notificationsFetched += page.items.count
            let popped = page.items.isEmpty && advance(&state, subWindow: fetched.subWindow)
            return (records, popped)
        }
    }

    /// Records in the checkpoint every page of `subWindow` whose records are all committed.
    private func advance(_ state: inout State, subWindow index: Int) -> Bool {
        var advanced = false
        guard var checkpoint = state.checkpoint else { return false }
        while let first = state.streams[index].pending.first, first.lastOffset <= state.streams[index].committedOffset {
            state.streams[index].pending.removeFirst()
            var sub = checkpoint.subWindows[index]
            sub.request = first.request
            sub.paginationToken = first.nextPaginationToken
            sub.pages += 1
            sub.notifications += first.notifications
            sub.done = first.nextPaginationToken == nil
            if let covered = first.coveredUntil { sub.coveredUntil = max(covered, sub.coveredUntil ?? covered) }
            checkpoint.subWindows[index] = sub
            advanced = true
        }
        state.checkpoint = checkpoint
        return advanced
    }

    /// `{"signedPayload":"..."}`, what Apple POSTs to the webhook.
    static func envelope(_ signedPayload: String) -> [UInt8] {
        // A compact JWS is base64url and dots: nothing to escape. Anything else is escaped properly.
        var payload = signedPayload
        let fast: [UInt8]? = payload.withUTF8 { bytes in
            // One pass without branches per byte (it runs over ~12 KB per notification).
            var bad: UInt8 = 0
            for byte in bytes {
                bad |= (byte &- 0x21 > 0x5D ? 1 : 0) | (byte == UInt8(ascii: "\"") ? 1 : 0) | (byte == UInt8(ascii: "\\") ? 1 : 0)
            }
            guard bad == 0 else { return nil }
            let prefix = #"{"signedPayload":""#.utf8, suffix = #""}"#.utf8
            var line: [UInt8] = []
            line.reserveCapacity(prefix.count + bytes.count + suffix.count)
            line += prefix
            line += bytes
            line += suffix
            return line
        }
        if let fast { return fast }
        let data = (try? JSONSerialization.data(withJSONObject: ["signedPayload": signedPayload])) ?? Data()
        return Array(data)
    }

    public func commit(_ positions: [SourcePosition]) async throws {
        var highest: [Int: Int64] = [:]
        for position in positions {
            guard position.stream.hasPrefix("appstore-history/"), let index = Int(position.stream.dropFirst("appstore-history/".count))
            else { continue }
            highest[index] = max(highest[index] ?? -1, position.offset)
        }
        let advanced = core.withState { state in
            var advanced = false
            for (index, offset) in highest where index < state.streams.count {
                state.streams[index].committedOffset = max(state.streams[index].committedOffset, offset)
                if advance(&state, subWindow: index) { advanced = true }
            }
            return advanced
        }
        if advanced { try await core.save(throttled: true) }
    }

    public func stop() async {
        await core.stop()
    }

    public func close() async throws {
        try await core.close()
    }
}
