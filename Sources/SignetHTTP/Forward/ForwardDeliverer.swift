import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SignetCore
import SignetState
import Synchronization

/// Sends one receiver's entries of the forward queue until its task is cancelled: claims due
/// entries (oldest first, leased), POSTs each body as it was received, then settles them in
/// the store: delivered ones removed, failed ones due again after a backoff, refused or
/// expired ones written to the dead-letter file first and then removed.
///
/// Between batches it sleeps until the next entry is due, at most the poll interval, or until
/// ``ForwardSink/write(_:)`` wakes it. A store failure (a PostgreSQL outage, a full disk) is
/// logged and tried again with backoff; nothing is lost by it, entries stay queued.
final class ForwardDeliverer: Sendable {
    let target: String
    /// Wake-ups from ``ForwardSink/write(_:)``, through the pipeline's one queue primitive: a
    /// wake while the deliverer is busy is kept for its next wait, so none is lost, and a
    /// spurious one only costs another look at the store.
    private let wakeups = WakeUp()
    private let options: ForwardSink.Options
    private let store: any ForwardQueueStore
    private let client: HTTPClient
    private let executor: BlockingExecutor
    private let deadLetters: ForwardDeadLetters
    private let metrics: ForwardMetrics
    private let logger: Logger
    /// Woken after every settled batch: the sink's drain waits on it instead of polling.
    private let settled: WakeUp
    /// When the receiver started failing (nil while it answers): one warning per outage, one
    /// notice when it recovers.
    private let failingSince = Mutex<Int64?>(nil)

    init(
        target: String, options: ForwardSink.Options, store: any ForwardQueueStore, client: HTTPClient, executor: BlockingExecutor,
        deadLetters: ForwardDeadLetters, metrics: ForwardMetrics, settled: WakeUp, logger: Logger
    ) {
        self.settled = settled
        self.target = target
        self.options = options
        self.store = store
        self.client = client
        self.executor = executor
        self.deadLetters = deadLetters
        self.metrics = metrics
        self.logger = logger
    }

    /// Ends the deliverer's current wait for work, or its next one at once.
    func wake() {
        wakeups.wake()
    }

    /// Whether the receiver's last answers were failures (an outage under way).
    var isFailing: Bool { failingSince.withLock { $0 != nil } }

    /// How often the queue gauges are read from the store while the deliverer runs.
    static let gaugeInterval = Duration.seconds(1)

    /// Delivers until cancelled, and keeps the queue gauges current meanwhile.
    func run() async {
        await withDiscardingTaskGroup { group in
            // Apart from the sends: a batch against a receiver that never answers takes up to
            // `timeout`, and one that keeps failing always has entries due again, so gauges
            // read only between idle waits stayed 0 through exactly the outage they are for.
            group.addTask { await self.reportQueueUntilCancelled() }
            await deliverUntilCancelled()
            group.cancelAll()
        }
    }

    /// Reads the receiver's queue (every entry, claimed and leased ones too) into the gauges
    /// at once, so a restarted process shows its backlog from its start, then every
    /// ``gaugeInterval``. A failing store is reported by the delivery loop.
    private func reportQueueUntilCancelled() async {
        while !Task.isCancelled {
            _ = try? await reportQueue()
            try? await Task.sleep(for: Self.gaugeInterval)
        }
    }

    /// The receiver's queue as the store holds it now, recorded in the gauges.
    private func reportQueue() async throws -> (ForwardQueueStatus, now: Int64) {
        let (target, store) = (self.target, self.store)
        let status = try await executor.run { try store.forwardQueueStatus(target: target) }
        let now = WallClock.milliseconds()
        metrics.queue(
            pending: status.pending, oldestAgeSeconds: Double(status.oldestEnqueuedAt.map { max(0, now - $0) } ?? 0) / 1000,
            target: target)
        return (status, now)
    }

    private func deliverUntilCancelled() async {
        var storeFailures = 0
        while !Task.isCancelled {
            do {
                if try await deliverDue() == 0 {
                    let (status, now) = try await reportQueue()
                    let untilDue = status.nextDueAt.map { Duration.milliseconds(max(0, $0 - now)) } ?? options.pollInterval
                    // Ends at a wake, at the deadline (an empty take) or when cancelled (thrown).
                    _ = try? await wakeups.wait(for: min(untilDue, options.pollInterval))
                }
                storeFailures = 0
            } catch {
                guard !Task.isCancelled else { return }
                storeFailures += 1
                let wait = min(Duration.seconds(1) * (1 << min(storeFailures, 5)), .seconds(30))
                logger.error("forward to \(target): the state store failed, trying again in \(wait): \(error)")
                try? await Task.sleep(for: wait)
            }
        }
    }

    /// Claims one batch of due entries, sends and settles them; how many were claimed.
    func deliverDue() async throws -> Int {
        let now = WallClock.milliseconds()
        let (target, store, limit) = (self.target, self.store, options.batch)
        let leaseUntil = now + options.lease.clampedMilliseconds
        let items = try await executor.run {
            try store.claimForwards(target: target, dueAtOrBefore: now, leaseUntil: leaseUntil, limit: limit)
        }
        guard !items.isEmpty else { return 0 }
        let outcomes = await send(items)
        // Closing cancels the sends under way: their entries are settled as retries (due again
        // soon, not held for a lease), but that is no outage of the receiver to report.
        let stopping = Task.isCancelled

        let settledAt = WallClock.milliseconds()
        var done: [Int64] = []
        var retries: [ForwardRetry] = []
        var dead: [ForwardDeadLetters.Entry] = []
        var lastFailure: String?
        for (item, outcome) in zip(items, outcomes) {
            switch outcome {
            case .delivered:
                done.append(item.id)
            case .refused(let status, let detail):
                dead.append(.init(item: item, reason: .forwardRefused, detail: "HTTP \(status): \(detail)", at: settledAt))
            case .retryable(let why, let retryAfter):
                lastFailure = why
                // A send cut short by the close never expires a body: it was not given its chance.
                if !stopping, settledAt - item.enqueuedAt >= options.maxAge.clampedMilliseconds {
                    dead.append(.init(
                        item: item, reason: .forwardExpired,
                        detail: "still failing after \(item.attempts) attempts and max_age (\(ConfigDuration.format(options.maxAge))): \(why)",
                        at: settledAt))
                } else {
                    retries.append(ForwardRetry(id: item.id, at: settledAt + delay(after: item.attempts, retryAfter).clampedMilliseconds, error: why))
                }
            }
        }
        // Durably in the dead-letter file before they leave the queue: a crash between the two
        // writes a dead letter twice, never none.
        if !dead.isEmpty { try await deadLetters.write(dead) }
        let (removed, due) = (done + dead.map(\.item.id), retries)
        try await executor.run { try store.settleForwards(done: removed, retries: due) }
        settled.wake()

        metrics.attempted("delivered", target: target, count: done.count)
        if !stopping { metrics.attempted("retry", target: target, count: retries.count) }
        metrics.attempted("refused", target: target, count: dead.count { $0.reason == .forwardRefused })
        metrics.attempted("expired", target: target, count: dead.count { $0.reason == .forwardExpired })
        for entry in dead {
            logger.error(
                "forward to \(target): dead-lettered a body queued at \(entry.item.enqueuedAt) (\(entry.reason.rawValue)): \(entry.detail); see \(deadLetters.path)")
        }
        if !stopping { noteHealth(failure: lastFailure, at: settledAt) }
        return items.count
    }

    /// Logs the start of an outage once and its end once (`failure`: the batch's last
    /// retryable failure; nil when every send was answered).
    private func noteHealth(failure: String?, at now: Int64) {
        let transition = failingSince.withLock { since -> (started: Bool, lasted: Int64?) in
            if failure != nil {
                guard since == nil else { return (false, nil) }
                since = now
                return (true, nil)
            }
            guard let began = since else { return (false, nil) }
            since = nil
            return (false, now - began)
        }
        if transition.started, let failure {
            logger.warning(
                "forward to \(target) failing: \(failure); bodies stay queued and are retried with backoff (up to \(ConfigDuration.format(options.maxBackoff)) apart)")
        } else if let lasted = transition.lasted {
            logger.notice("forward to \(target) recovered after \(lasted / 1000) s")
        }
    }

    /// The wait before the next attempt: initial_backoff doubling per attempt, at most
    /// max_backoff, at least what the receiver's Retry-After asked.
    func delay(after attempts: Int, _ retryAfter: Duration?) -> Duration {
        var wait = options.initialBackoff
        for _ in 1..<max(attempts, 1) where wait < options.maxBackoff { wait *= 2 }
        return min(max(wait, retryAfter ?? .zero), options.maxBackoff)
    }

    /// POSTs every item, at most `concurrency` at once; the outcomes in the items' order.
    private func send(_ items: [ForwardQueueItem]) async -> [HTTPSink.Outcome] {
        var outcomes = [HTTPSink.Outcome](repeating: .retryable("not sent", retryAfter: nil), count: items.count)
        await withTaskGroup(of: (Int, HTTPSink.Outcome).self) { group in
            var next = 0
            func addNext() {
                guard next < items.count else { return }
                let index = next
                next += 1
                group.addTask { (index, await self.post(items[index].body)) }
            }
            for _ in 0..<max(1, options.concurrency) { addNext() }
            for await (index, outcome) in group {
                outcomes[index] = outcome
                addNext()
            }
        }
        return outcomes
    }

    private func post(_ body: [UInt8]) async -> HTTPSink.Outcome {
        var request = HTTPClientRequest(url: target)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "signet-forward")
        request.body = .bytes(ByteBuffer(bytes: body))
        return await HTTPSink.exchange(request, with: client, timeout: options.timeout, logger: logger)
    }
}
