import AppStoreModels
import Foundation
public import Logging
public import SignetAppStoreAPI
public import SignetCore

/// A source of Apple's current view of purchases: for each id of a list, Get All Subscription
/// Statuses, and for every subscription in the answer one record as Apple lists it
/// (`{"originalTransactionId", "status", "signedTransactionInfo", "signedRenewalInfo"}`), which
/// `decode` reads as a status input: verified, then applied by `transition` as authoritative,
/// ordered against notifications by its signedDate, silent where the state already agrees
/// (docs/state-machine.md). `signet reconcile` runs a pipeline with it.
///
/// Ids are fetched `parallelism` at a time through one client (so within its rate limit); an
/// id Apple knows nothing of (4040010) is counted and skipped. The checkpoint records how many
/// ids, from the first, are done (all their records committed): a restart with the same list
/// resumes there, a finished or different list starts over.
public final class AppStoreStatusSource: Source {
    public struct Options: Sendable {
        /// The purchases to ask about (any transaction id of each; originalTransactionId is usual).
        public var ids: [String]
        /// A file with more ids (`PurchaseIDList`), read when the source opens.
        public var idsFile: String?
        /// Ids read page by page instead of `ids` and `idsFile` (every purchase of a store),
        /// ascending: memory stays one page however many there are. Implies `ascending`.
        public var idPages: PurchaseIDPages?
        /// The ids are in ascending order and the list may grow between runs (every purchase
        /// of a store: `signet reconcile --all`): an unfinished checkpoint of an earlier list
        /// resumes after the last id it finished instead of starting over.
        public var ascending = false
        /// The checkpoint file.
        public var checkpointPath: String
        /// Ids asked about at the same time.
        public var parallelism = 8
        /// How long a batch waits for more answers once it has one (fewer, larger commits).
        public var batchLinger: Duration = .milliseconds(250)

        public init(ids: [String], checkpointPath: String) {
            self.ids = ids
            self.checkpointPath = checkpointPath
        }
    }

    /// The stream of every record in positions.
    package static let streamName = "appstore-statuses"

    /// Figures for progress lines.
    public struct Progress: Sendable, Equatable {
        public var total: Int
        public var doneAtStart: Int
        public var done: Int
        public var statuses: Int
        public var notFound: Int
        public var resumed: Bool
        public var finished: Bool

        /// `1200/10000 purchases, 1300 statuses, 4 unknown to Apple, 38.0/s, about 3m left`
        /// (with what an earlier run did when this one resumed).
        public func line(elapsed seconds: Double) -> String {
            let thisRun = done - doneAtStart
            let rate = seconds > 0 ? Double(thisRun) / seconds : 0
            var text = "\(done)/\(total) purchases, \(statuses) statuses, \(notFound) unknown to Apple"
            if resumed { text += " (resumed after \(doneAtStart) done by an earlier run)" }
            text += ", " + String(format: "%.1f/s", rate)
            if rate > 0, !finished { text += ", about \(Self.duration(Double(total - done) / rate)) left" }
            return text
        }

        static func duration(_ seconds: Double) -> String {
            let whole = Int(seconds.rounded(.up))
            return whole >= 3600 ? "\(whole / 3600)h\(whole % 3600 / 60)m" : whole >= 60 ? "\(whole / 60)m\(whole % 60)s" : "\(whole)s"
        }
    }

    /// One id's answer: its records' bodies, or that Apple knows none.
    struct Answer: Sendable {
        var index: Int
        var lines: [[UInt8]]
        var notFound: Bool
    }

    private struct State {
        /// The ids from index `windowStart` on that are read and not yet claimed past: the whole
        /// list, or one page of ``Options/idPages``.
        var window: [String] = []
        var windowStart = 0
        /// The list ends at index `total` (a paged list's count at open).
        var total = 0
        /// Ids claimed and not yet passed by the checkpoint, by index (for `lastDone`).
        var claimed: [Int: String] = [:]
        /// Where a paged list's first page starts (after the last id done by an earlier run).
        var pageAfter: String?
        /// A worker is reading the next page; the others wait for it.
        var readingPage = false
        var checkpoint: AppStoreStatusCheckpoint?
        var doneAtStart = 0
        var resumed = false
        var nextClaim = 0
        var nextOffset: Int64 = 0
        /// Records handed out and not committed yet: offset -> id index.
        var indexOfOffset: [Int64: Int] = [:]
        /// Per fetched id not yet done: records not committed yet.
        var outstanding: [Int: Int] = [:]
        /// Ids done beyond the first not-done one.
        var doneAhead: Set<Int> = []
    }

    public let options: Options
    private let logger: Logger
    /// The client, the buffer, the checkpoint writer, the fetcher and ``State``.
    private let core: FetchingSourceCore<Answer, State, AppStoreStatusCheckpoint>

    /// - Parameters:
    ///   - makeClient: builds the API client when the source opens; the source shuts it
    ///     down when it closes.
    ///   - options: the component's settings (its `Options`); the defaults fit most uses.
    ///   - logger: where it logs what it does and what fails.
    public init(
        options: Options, logger: Logger = Logger(label: "signet.appstore-statuses"),
        makeClient: @escaping @Sendable () throws -> AppStoreServerAPIClient
    ) {
        self.options = options
        self.logger = logger
        // Checkpoint writes at most once a second (``close()`` writes the rest): a crash asks
        // Apple about a second's ids again.
        self.core = FetchingSourceCore(
            name: "appstore_statuses", makeClient: makeClient, state: State(), checkpoint: \.checkpoint,
            checkpointPath: options.checkpointPath, checkpointInterval: .seconds(1), label: "signet.appstore-statuses",
            write: { checkpoint, path in try checkpoint.save(to: path) }, bufferCapacity: max(4, 2 * options.parallelism),
            batchLinger: options.batchLinger)
    }

    public var progress: Progress? {
        core.withState { state in
            guard let checkpoint = state.checkpoint else { return nil }
            return Progress(
                total: checkpoint.total, doneAtStart: state.doneAtStart, done: checkpoint.done, statuses: checkpoint.statuses,
                notFound: checkpoint.notFound, resumed: state.resumed, finished: checkpoint.isFinished)
        }
    }

    public func open() async throws {
        let explicit = options.ids, file = options.idsFile, path = options.checkpointPath, pages = options.idPages
        let ascending = options.ascending || pages != nil
        let (client, (ids, checkpoint)) = try await core.open { [logger, core] client in
            let environment = client.configuration.environment.rawValue, bundleId = client.configuration.credentials.bundleId
            let saved = try AppStoreStatusCheckpoint.load(path)
            // A paged list is counted and digested here, a page at a time; `doneBefore` counts
            // its ids up to the saved checkpoint's last one (where an ascending resume goes on).
            let ids: [String]
            var fresh: AppStoreStatusCheckpoint
            var doneBefore = 0
            if let pages {
                var digest = AppStoreStatusCheckpoint.ListDigest(), total = 0
                let last = saved?.lastDone
                try pages.forEach { id in
                    digest.add(id)
                    total += 1
                    if let last, id <= last { doneBefore += 1 }
                }
                ids = []
                fresh = AppStoreStatusCheckpoint(listDigest: digest.finish(), total: total, environment: environment, bundleId: bundleId)
            } else {
                ids = try PurchaseIDList.read(explicit: explicit, file: file)
                fresh = AppStoreStatusCheckpoint(ids: ids, environment: environment, bundleId: bundleId)
                if let last = saved?.lastDone { doneBefore = ids.firstIndex { $0 > last } ?? ids.count }
            }
            try core.createCheckpointFolder()
            fresh.ascending = ascending ? true : nil
            guard let saved, !saved.isFinished else { return (ids, fresh) }
            guard saved.environment == environment, saved.bundleId == bundleId else {
                logger.notice("an unfinished reconcile of another app or environment in \(path) is replaced by this one")
                return (ids, fresh)
            }
            // A paged list resumes by the last id done: a checkpoint without one starts over.
            if saved.listDigest == fresh.listDigest, pages == nil || saved.done == 0 || saved.lastDone != nil { return (ids, saved) }
            if ascending, saved.ascending == true, let last = saved.lastDone {
                // The store gained purchases since: go on after the last one done.
                fresh.done = doneBefore
                fresh.statuses = saved.statuses
                fresh.notFound = saved.notFound
                fresh.lastDone = last
                return (ids, fresh)
            }
            logger.notice("an unfinished reconcile of another list in \(path) is replaced by this one")
            return (ids, fresh)
        }
        let resumed = checkpoint.done > 0
        if resumed { logger.notice("resuming the unfinished reconcile: \(checkpoint.done) of \(checkpoint.total) purchases done") }
        core.withState { state in
            if pages != nil {
                // The first page is read by the first claim, after the last id done.
                state.windowStart = checkpoint.done
                state.pageAfter = checkpoint.done > 0 ? checkpoint.lastDone : nil
            } else {
                state.window = ids
            }
            state.total = checkpoint.total
            state.checkpoint = checkpoint
            state.doneAtStart = checkpoint.done
            state.resumed = resumed
            state.nextClaim = checkpoint.done
        }
        // Every id not done yet, `parallelism` at a time.
        try await core.startFetching(
            workers: options.parallelism, claim: { [self] in try await claim() },
            fetch: { [self] index, id in await core.send(try await answer(index, id: id, client: client)) })
    }

    /// What a worker does next: ask about an id, read the next page, wait for another worker's
    /// read, or stop.
    private enum Claim: Sendable {
        case id(Int, String)
        case readPage(after: String?)
        case waitForPage
        case none
    }

    /// The next id nobody asked about yet: its index and value. When a paged list's window is
    /// used up, one worker reads the next page (a blocking store read, on the checkpoint
    /// writer's thread) while the others wait for it.
    private func claim() async throws -> (Int, String)? {
        while true {
            let next: Claim = core.withState { state in
                guard state.nextClaim < state.total else { return .none }
                if state.nextClaim - state.windowStart < state.window.count {
                    let index = state.nextClaim
                    let id = state.window[index - state.windowStart]
                    state.claimed[index] = id
                    state.nextClaim += 1
                    return .id(index, id)
                }
                guard options.idPages != nil else { return .none }
                if state.readingPage { return .waitForPage }
                state.readingPage = true
                return .readPage(after: state.window.last ?? state.pageAfter)
            }
            switch next {
            case .id(let index, let id):
                return (index, id)
            case .none:
                return nil
            case .waitForPage:
                try await Task.sleep(for: .milliseconds(5))
            case .readPage(let after):
                guard let pages = options.idPages else { return nil }
                let page: [String]
                do {
                    page = try await core.blocking { try pages.read(after, pages.pageSize) }
                } catch {
                    core.withState { $0.readingPage = false }
                    throw error
                }
                core.withState { state in
                    state.readingPage = false
                    guard !page.isEmpty else {
                        // Purchases were deleted since the count: the list ends here.
                        state.total = state.nextClaim
                        state.checkpoint?.total = state.nextClaim
                        return
                    }
                    state.windowStart += state.window.count
                    state.window = page
                }
            }
        }
    }

    /// Get All Subscription Statuses for id `index`, as record bodies: in whichever store knows
    /// it (a bare id may be a TestFlight or App Review purchase, in Sandbox).
    private func answer(_ index: Int, id: String, client: AppStoreServerAPIClient) async throws -> Answer {
        let response: SubscriptionStatusesResponse
        do {
            (response, _) = try await client.lookUpSubscriptionStatuses(transactionId: id)
        } catch let error as AppStoreAPIError where error.isTransactionIdNotFound {
            let stores = client.configuration.environment == .production ? "Production nor Sandbox" : "Sandbox"
            logger.warning("Apple knows no purchase with transaction id \(id) in \(stores): skipped")
            return Answer(index: index, lines: [], notFound: true)
        }
        return Answer(index: index, lines: Self.records(of: response), notFound: false)
    }

    /// One record body per subscription of the answer, as `decode` reads a status input.
    static func records(of response: SubscriptionStatusesResponse) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        for group in response.data {
            for last in group.lastTransactions {
                guard last.signedTransactionInfo != nil || last.signedRenewalInfo != nil else { continue }
                var json = JSONText(reserving: 8192)
                json.beginObject()
                json.field("originalTransactionId", last.originalTransactionId)
                json.field("status", last.status.map { $0.rawValue })
                json.field("signedTransactionInfo", last.signedTransactionInfo)
                json.field("signedRenewalInfo", last.signedRenewalInfo)
                json.endObject()
                lines.append(json.bytes)
            }
        }
        return lines
    }

    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        try await core.nextBatch(maxRecords: maxRecords, recordsPerAnswer: 1, accept: accept)
    }

    /// Turns an answer into records; an answer without any is done at once (returns whether
    /// the checkpoint advanced).
    private func accept(_ answer: Answer) -> ([Record], Bool) {
        core.withState { state in
            var records: [Record] = []
            for line in answer.lines {
                records.append(Record(raw: line, position: SourcePosition(stream: Self.streamName, offset: state.nextOffset)))
                state.indexOfOffset[state.nextOffset] = answer.index
                state.nextOffset += 1
            }
            if answer.notFound { state.checkpoint?.notFound += 1 }
            guard records.isEmpty else {
                state.outstanding[answer.index] = records.count
                return (records, false)
            }
            return ([], markDone(&state, answer.index))
        }
    }

    /// Records id `index` as done; advances the checkpoint over every done id from its first
    /// not-done one. Returns whether it advanced.
    private func markDone(_ state: inout State, _ index: Int) -> Bool {
        guard var checkpoint = state.checkpoint else { return false }
        state.doneAhead.insert(index)
        let before = checkpoint.done
        while state.doneAhead.remove(checkpoint.done) != nil {
            let id = state.claimed.removeValue(forKey: checkpoint.done)
            checkpoint.done += 1
            if let id { checkpoint.lastDone = id }
        }
        state.checkpoint = checkpoint
        return checkpoint.done > before
    }

    public func commit(_ positions: [SourcePosition]) async throws {
        let advanced = core.withState { state in
            var advanced = false
            for position in positions where position.stream == Self.streamName {
                guard let index = state.indexOfOffset.removeValue(forKey: position.offset) else { continue }
                state.checkpoint?.statuses += 1
                let left = (state.outstanding[index] ?? 1) - 1
                if left > 0 {
                    state.outstanding[index] = left
                } else {
                    state.outstanding[index] = nil
                    if markDone(&state, index) { advanced = true }
                }
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
