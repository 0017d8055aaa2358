import AppStoreModels
import Foundation
public import Logging
public import SignetAppStoreAPI
public import SignetCore
public import SignetState
import Synchronization

/// Reconciles stale purchases by itself (service mode): every `interval` it asks the store for
/// the subscriptions whose period ended within `window` (and at least `leeway` ago) although
/// Signet expected them to renew (`StateStore/staleSubscriptions(endedAfter:endedBefore:limit:)`):
/// Apple renewed them and the notification never came, or they lapsed with no notice. For each
/// it fetches Get All Subscription Statuses and feeds every status into the later stages as
/// `signet reconcile` does: verified, then applied by `transition` as Apple's current view,
/// silent where the state already agrees.
///
/// Each purchase is asked about in the store it was bought in (Production, or Sandbox for
/// TestFlight and App Review purchases when the key is Production's).
///
/// Put it first in `stages:`, before `decode`. Each stale period is asked about once per run
/// (a purchase whose period Apple did not extend stays stale, and is asked again only after a
/// restart); fetching runs beside the pipeline within the process-wide rate limit, and the
/// runner takes what arrived between batches (``tick()``). A failed fetch is logged and tried
/// again at the next sweep.
public final class AppStoreReconcileStage: TickingStage {
    public struct Options: Sendable {
        /// Time between sweeps; zero turns the stage into a pass-through that calls no API.
        public var interval: Duration = .seconds(6 * 3600)
        /// How long ago a period may have ended and still be asked about.
        public var window: Duration = .seconds(3 * 86_400)
        /// How long after a period's end Apple's renewal notification is waited for first.
        public var leeway: Duration = .seconds(3600)
        /// Most purchases one sweep asks about.
        public var limit = 1000

        public init() {}
    }

    public let name = "appstore_reconcile"
    public let options: Options
    private let store: StateStoreResource
    private let makeClient: @Sendable () throws -> AppStoreServerAPIClient
    private let logger: Logger
    private let buffer = RecordQueue<[[UInt8]]>(capacity: 64)
    private let state = Mutex(State())

    private let sweeps = BackgroundSweeps()
    /// Store queries block (a server store): on a thread of their own.
    private let storeReads = BlockingExecutor(label: "signet.appstore-reconcile.store")

    private struct State {
        var nextOffset: Int64 = 0
        /// Purchase → the period end it was asked about (asked once per stale period).
        var asked: [String: Int64] = [:]
    }

    /// - Parameters:
    ///   - makeClient: builds the API client when the stage opens (so loading or
    ///     linting a pipeline needs no credentials); the stage shuts it down when it closes.
    ///   - store: the state store it reads and writes.
    ///   - options: the component's settings (its `Options`); the defaults fit most uses.
    ///   - logger: where it logs what it does and what fails.
    public init(
        options: Options, store: StateStoreResource, logger: Logger = Logger(label: "signet.appstore-reconcile"),
        makeClient: @escaping @Sendable () throws -> AppStoreServerAPIClient
    ) {
        self.options = options
        self.store = store
        self.logger = logger
        self.makeClient = makeClient
    }

    private var enabled: Bool { options.interval > .zero }

    public var tickInterval: Duration? { enabled ? .milliseconds(200) : nil }

    public func open() async throws {
        guard enabled else {
            logger.info("appstore_reconcile: interval is 0s; no reconcile sweeps")
            return
        }
        try sweeps.start(
            stage: name, interval: options.interval, makeClient: makeClient,
            announce: { [logger, options] configuration in
                logger.info(
                    "reconcile sweeps every \(ConfigDuration.format(options.interval)) for subscriptions whose period ended in the last \(ConfigDuration.format(options.window)) with no renewal and no expiry notice (\(configuration.environment.rawValue))")
            },
            sweep: { [self] client in await sweep(client: client) })
    }

    /// Stale purchases read from the store per query.
    static let pageSize = 500

    /// One sweep; false when the stage is closing.
    ///
    /// Pages through the stale purchases in SQL (keyset, by id), past those asked about
    /// already: a thousand purchases Apple leaves stale must not hide the ones after them.
    private func sweep(client: AppStoreServerAPIClient) async -> Bool {
        let now = WallClock.milliseconds()
        var asked = 0, statuses = 0, after: String?
        do {
            pages: while asked < options.limit {
                let page = try await withTaskExecutorPreference(storeReads) { [store, options, after] in
                    try store.roles().staleSubscriptions(
                        endedAfter: now - options.window.clampedMilliseconds, endedBefore: now - options.leeway.clampedMilliseconds,
                        after: after, limit: Self.pageSize)
                }
                for purchase in page {
                    guard asked < options.limit else { break pages }
                    guard state.withLock({ $0.asked[purchase.originalTransactionId] != purchase.periodEnd }) else { continue }
                    let lines = try await records(for: purchase, client: client)
                    state.withLock { $0.asked[purchase.originalTransactionId] = purchase.periodEnd }
                    asked += 1
                    statuses += lines.count
                    guard await buffer.send(lines) else { return false }
                }
                guard page.count == Self.pageSize, let last = page.last else { break }
                after = last.originalTransactionId
            }
            if asked > 0 {
                logger.notice("reconcile sweep: asked Apple about \(asked) stale subscriptions, \(statuses) statuses")
            }
        } catch is CancellationError {
            return false
        } catch {
            if Task.isCancelled { return false }
            logger.warning(
                "reconcile sweep failed: \(error); the next sweep, in \(ConfigDuration.format(options.interval)), tries again")
        }
        return true
    }

    /// Apple's statuses of `purchase` as record bodies, asked of the store it was bought in
    /// (none recorded: Production, then Sandbox); none for a purchase Apple does not know.
    private func records(for purchase: StalePurchase, client: AppStoreServerAPIClient) async throws -> [[UInt8]] {
        let id = purchase.originalTransactionId
        let configured = client.configuration.environment
        do {
            guard let recorded = purchase.environment.map(AppStoreEnvironment.init(rawValue:)) else {
                return AppStoreStatusSource.records(of: try await client.lookUpSubscriptionStatuses(transactionId: id).0)
            }
            guard client.reaches(recorded) else {
                logger.warning(
                    "purchase \(id) was made in \(recorded.rawValue), which this \(configured.rawValue) API key does not reach: not reconciled")
                return []
            }
            return AppStoreStatusSource.records(of: try await client.subscriptionStatuses(transactionId: id, in: recorded))
        } catch let error as AppStoreAPIError where error.isTransactionIdNotFound {
            logger.warning("Apple knows no purchase with transaction id \(id) in \(purchase.environment ?? "Production or Sandbox"): skipped")
            return []
        }
    }

    public func process(_ batch: inout RecordBatch) async throws {}

    public func tick() async throws -> RecordBatch? {
        var records: [Record] = []
        for lines in buffer.poll() {
            let first = state.withLock { state in
                defer { state.nextOffset += Int64(lines.count) }
                return state.nextOffset
            }
            for (index, line) in lines.enumerated() {
                records.append(Record(raw: line, position: SourcePosition(stream: "appstore-reconcile", offset: first + Int64(index))))
            }
        }
        return records.isEmpty ? nil : RecordBatch(records: records)
    }

    public func close() async throws {
        buffer.stop()
        try await sweeps.stop()
    }
}
