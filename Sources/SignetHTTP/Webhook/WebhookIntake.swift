import NIOCore
import SignetCore
import SignetJWS
import Synchronization

/// The hand-off between HTTP requests and the pipeline runner: requests become queued
/// records, the runner takes them in batches, and a record's request is answered when
/// the runner commits its position (every sink acknowledged or the record was
/// dead-lettered) — never earlier.
///
/// Many requests waiting at once ride in one batch and so share one state commit and
/// one sink flush (group commit). A record accepted here stays in the pipeline even
/// when its client hangs up or its answer times out: it is still committed, and
/// Apple's retry is then recognised by `dedupe`.
final class WebhookIntake: Sendable {
    /// What a request learns about its record.
    enum Fate: Sendable {
        /// Committed: state written and every sink acknowledged, dead-lettered with a
        /// reason, or dropped on purpose (a retry `dedupe` recognised); the status says
        /// which, and the parts what the stages learned.
        case committed(RecordOutcome)
        /// Not taken or not committed: the client should retry later (503).
        case unavailable(UnavailableReason)
    }

    /// Why a request is answered 503.
    enum UnavailableReason: String, Sendable, Equatable {
        /// Too many records accepted and not yet committed.
        case backpressure
        /// The pipeline is draining for shutdown.
        case draining
        /// The pipeline stopped (a sink or store failed for good) before the record was committed.
        case stopped
        /// The record was not committed within the response timeout (a sink is retrying);
        /// it stays in the pipeline and a retry is deduplicated.
        case timeout
        /// Committed as a dead letter for another app or environment than configured, and
        /// the source asks Apple to send it again (`retry_misconfigured`).
        case misconfigured
    }

    /// Counts for tests, benchmarks and metrics.
    struct Statistics: Sendable, Equatable {
        /// Records taken into the pipeline.
        var accepted = 0
        /// Requests turned away before becoming a record (backpressure, draining).
        var refused = 0
        /// Records whose position was committed.
        var committed = 0
        /// `commit` calls that resolved at least one record: group commits.
        var commits = 0
        /// Accepted records not yet committed.
        var inFlight: Int { accepted - committed - abandoned }
        /// Records lost to a stopped pipeline (never committed, answered 503).
        var abandoned = 0
    }

    /// A request waiting for its record's commit, and the deadline that ends the wait.
    private struct Waiter {
        var continuation: CheckedContinuation<Fate, Never>
        /// On the request's connection's event loop: cancelled for free when the commit comes first.
        var deadline: Scheduled<Void>
    }

    private struct State: ~Copyable {
        var waiters: [Int64: Waiter] = [:]
        /// Accepted and not yet committed, by offset; answered or not.
        var uncommitted: Set<Int64> = []
        var nextOffset: Int64 = 1
        var stopping = false
        var closed = false
        var statistics = Statistics()
    }

    /// The stream name in the records' positions.
    let stream: String
    /// The stream name of the records the app's backend posts on the purchase path, so their
    /// dead letters and logs say where they came from; offsets are shared with ``stream``.
    let purchaseStream: String?
    private let maxInFlight: Int
    /// How long a batch smaller than the runner asked for waits, from its oldest record's
    /// arrival, for more requests to share its commit (``HTTPSource/Options/batchLinger``).
    let linger: Duration
    /// Accepted records on their way to the runner. Never full: admission is bounded by
    /// `maxInFlight` uncommitted records, which includes every queued one.
    let queue: RecordQueue<Record>
    private let state = Mutex(State())

    init(
        stream: String, purchaseStream: String? = nil, maxInFlight: Int, linger: Duration = .zero
    ) {
        self.stream = stream
        self.purchaseStream = purchaseStream
        self.maxInFlight = maxInFlight
        self.linger = linger
        self.queue = RecordQueue(capacity: maxInFlight)
    }

    var statistics: Statistics { state.withLock { $0.statistics } }

    /// Whether new requests are taken (false while draining or after close).
    var isAccepting: Bool { state.withLock { !$0.stopping && !$0.closed } }

    /// Queues `body` as a record and waits for its fate. The record is committed even if
    /// the caller stops waiting (`timeout` ends the wait, not the record). With `kind`,
    /// `decode` rejects a body carrying any other kind of signed object.
    /// The answer's deadline runs on `eventLoop`, the request's connection's.
    func submit(_ body: [UInt8], requiring kind: SignedEnvelope.Kind? = nil, timeout: Duration, on eventLoop: any EventLoop) async -> Fate {
        await withCheckedContinuation { continuation in
            // Admission and registering the waiter happen under one lock, so a commit can
            // never come between them.
            state.withLock { state in
                if state.stopping || state.closed {
                    state.statistics.refused += 1
                    continuation.resume(returning: .unavailable(.draining))
                    return
                }
                if state.uncommitted.count >= maxInFlight {
                    state.statistics.refused += 1
                    continuation.resume(returning: .unavailable(.backpressure))
                    return
                }
                let offset = state.nextOffset
                state.nextOffset += 1
                let named = kind == nil ? stream : purchaseStream ?? stream
                var record = Record(raw: body, position: SourcePosition(stream: named, offset: offset))
                record.sourceTimestamp = WallClock.milliseconds()
                record[RequiredEnvelopeKindPart.self] = kind
                // Under this lock, so records queue in offset order.
                guard queue.offer([record]) else {
                    state.statistics.refused += 1
                    continuation.resume(returning: .unavailable(.draining))
                    return
                }
                state.uncommitted.insert(offset)
                let deadline = eventLoop.scheduleTask(in: .nanoseconds(timeout.clampedNanoseconds)) { [self] in expire(offset) }
                state.waiters[offset] = Waiter(continuation: continuation, deadline: deadline)
                state.statistics.accepted += 1
            }
        }
    }

    /// Up to `maxRecords` queued records; waits for the first one, then lingers until
    /// `linger` after its arrival when fewer than `maxRecords` are queued (a steady trickle of
    /// requests then shares one commit instead of paying one each). Nil once stopped and empty.
    func nextBatch(maxRecords: Int) async throws -> [Record]? {
        try await queue.nextElements(max: maxRecords, linger: linger > .zero ? .sinceOldest(linger) : .none)
    }

    /// The runner committed these records: answer their requests with what became of them.
    func commit(_ outcomes: [RecordOutcome]) {
        state.withLock { state in
            var resolved = 0
            for outcome in outcomes where outcome.position.stream == stream || outcome.position.stream == purchaseStream {
                guard state.uncommitted.remove(outcome.position.offset) != nil else { continue }
                resolved += 1
                resume(state.waiters.removeValue(forKey: outcome.position.offset), .committed(outcome))
            }
            if resolved > 0 {
                state.statistics.committed += resolved
                state.statistics.commits += 1
            }
        }
    }

    /// Stops taking requests (they get 503 `draining`); queued records still drain.
    func stop() {
        state.withLock { $0.stopping = true }
        // Queued records still go to the runner, without lingering.
        queue.finish()
    }

    /// After the last commit: whatever is still uncommitted was not handled (the runner
    /// failed or the shutdown timed out) and is answered 503 so the sender retries.
    func close() {
        state.withLock { state in
            state.closed = true
            state.statistics.abandoned += state.uncommitted.count
            state.uncommitted.removeAll()
            for (_, waiter) in state.waiters { resume(waiter, .unavailable(.stopped)) }
            state.waiters.removeAll()
        }
        queue.stop()
    }

    /// Ends one request's wait (503 `timeout`) without touching its record.
    private func expire(_ offset: Int64) {
        state.withLock { state in
            resume(state.waiters.removeValue(forKey: offset), .unavailable(.timeout))
        }
    }

    private func resume(_ waiter: Waiter?, _ fate: Fate) {
        guard let waiter else { return }
        waiter.deadline.cancel()
        waiter.continuation.resume(returning: fate)
    }
}
