package import Logging
package import SignetAppStoreAPI
import SignetCore
package import SignetState
import AppStoreModels
import Foundation

/// Answers the refund questions `transition` stored (docs/consumption.md): each sweep claims
/// the requests that are due, decides each by the ``ConsumptionPolicy``, sends the answers
/// through the API client (its rate budget and retries) and records what became of them.
///
/// - **Never late**: a request past its deadline is marked `late` and never sent; a call still
///   retrying at the deadline is abandoned.
/// - **Never twice**: a request is claimed in the store transaction that reads it (its `dueAt`
///   moves `claim` ahead; a shared store skips rows another instance holds), so two instances
///   or two sweeps never send one request; an answer Apple accepted is recorded `answered`, final.
///   The one window left is a crash between Apple's 202 and that record: the claim expires and
///   the answer is sent once more (the same body).
/// - **Resumed**: pending requests live in the store; a restart's first sweep takes them up
///   (an expired claim is due again).
package final class ConsumptionResponder: Sendable {
    package struct Options: Sendable {
        package var policy = ConsumptionPolicy()
        /// Most requests one sweep claims.
        package var batchLimit = 50
        /// How long a claimed request is held before another sweep (or instance, or a restart)
        /// may take it again: longer than one answer takes with the client's retries.
        package var claim: Duration = .seconds(120)
        /// The first wait before a failed attempt is tried again; doubled per attempt.
        package var retryDelay: Duration = .seconds(30)
        /// The current time in ms since 1970 (tests inject their own).
        package var clock: @Sendable () -> Int64 = { WallClock.milliseconds() }

        package init() {}
    }

    /// What one sweep did.
    package struct SweepCounts: Sendable, Hashable {
        /// Apple accepted the answer.
        package var answered: Int
        /// Not answered: no consent, or consent withdrawn.
        package var skipped: Int
        /// Past the deadline: not sent.
        package var late: Int
        /// Apple refused the answer for good, or none could be built.
        package var failed: Int
        /// Failed for now; tried again at a later sweep.
        package var retrying: Int

        package init(answered: Int = 0, skipped: Int = 0, late: Int = 0, failed: Int = 0, retrying: Int = 0) {
            self.answered = answered
            self.skipped = skipped
            self.late = late
            self.failed = failed
            self.retrying = retrying
        }
    }

    package let options: Options
    private let store: StateStoreResource
    private let logger: Logger
    private let metrics: ConsumptionMetrics
    /// Store calls block (a server store): on a thread of their own.
    private let storeCalls = BlockingExecutor(label: "signet.consumption.store")

    package init(options: Options, store: StateStoreResource, logger: Logger = Logger(label: "signet.consumption")) {
        self.options = options
        self.store = store
        self.logger = logger
        self.metrics = ConsumptionMetrics()
    }

    /// One request claimed for sending, with its body.
    private struct Claimed: Sendable {
        var request: ConsumptionRequestRecord
        var body: Body
    }

    private enum Body: Sendable {
        case v2(ConsumptionInformation)
        case v1(ConsumptionInformationV1)
    }

    /// Claims what is due, answers it, records the results; repeats while a full batch was
    /// claimed. Throws only for the store (the next sweep tries again).
    @discardableResult
    package func sweep(client: AppStoreServerAPIClient) async throws -> SweepCounts {
        var counts = SweepCounts()
        while !Task.isCancelled {
            let (claimed, settled, settledCounts) = try await onStore { try self.claim() }
            counts.add(settledCounts)
            await withTaskGroup(of: Void.self) { group in
                for item in claimed {
                    group.addTask { await self.answer(item, client: client) }
                }
            }
            for item in claimed { counts.record(try await onStore { try self.lastResult(of: item.request) }) }
            if claimed.count + settled < options.batchLimit { break }
        }
        try await publishBacklog()
        return counts
    }

    /// Claims up to `batchLimit` due requests (one transaction: each is held for `claim`, so no
    /// other sweep or instance takes it meanwhile), then decides each: late, skipped and failed
    /// ones are recorded at once, the rest returned with their bodies.
    ///
    /// The decision reads the ledger and the purchase outside the claim's transaction: a shared
    /// store's `transition` locks a purchase before its requests, so locking them the other way
    /// round here could deadlock with it.
    private func claim() throws -> (claimed: [Claimed], settled: Int, counts: SweepCounts) {
        var counts = SweepCounts()
        let now = options.clock()
        let store = try store.roles()
        let held = now + options.claim.clampedMilliseconds
        let due: [ConsumptionRequestRecord] = try store.withTransaction { transaction in
            try transaction.consumptionRequestsDue(atOrBefore: now, limit: options.batchLimit).map { request in
                var request = request
                request.dueAt = held
                try transaction.save(request)
                return request
            }
        }
        let names = store.entitlementNames
        var claimed: [Claimed] = []
        var settled = 0
        for var request in due {
            let consent = try store.consumptionConsent(for: request)
            let usage = try store.consumptionUsage(transactionId: request.transactionId)
            let purchase = try request.originalTransactionId.flatMap { try store.subscription(originalTransactionId: $0) }
            switch options.policy.decide(request, consent: consent, usage: usage, purchase: purchase, names: names, at: now) {
            case .late(let why):
                request.settle(.late, why)
            case .skip(let why):
                request.settle(.skipped, why)
            case .fail(let why):
                request.settle(.failed, why)
            case .send(let body, let note):
                request.hold(until: held, body: try Self.json(body), note: note)
                request.refundPreference = body.refundPreference?.rawValue
                claimed.append(Claimed(request: request, body: .v2(body)))
                continue
            case .sendV1(let body, let note):
                request.hold(until: held, body: try Self.json(body), note: note)
                request.refundPreference = body.refundPreference.map(String.init)
                claimed.append(Claimed(request: request, body: .v1(body)))
                continue
            }
            try record(request)
            settled += 1
            switch request.status {
            case .late: metrics.late(); counts.late += 1
            case .skipped: metrics.skipped(); counts.skipped += 1
            default: metrics.failed(); counts.failed += 1
            }
            let level: Logger.Level = request.status == .skipped ? .info : .warning
            logger.log(level: level, "consumption request for transaction \(request.transactionId) \(request.status.rawValue): \(request.detail ?? "")")
        }
        return (claimed, settled, counts)
    }

    /// Sends one answer and records the result in the store.
    private func answer(_ item: Claimed, client: AppStoreServerAPIClient) async {
        var request = item.request
        let environment = request.environment.map(AppStoreEnvironment.init(rawValue:))
        let result: Result<Void, any Error>
        if let environment, !client.reaches(environment) {
            result = .failure(Unreachable(environment: environment, configured: client.configuration.environment))
        } else {
            let transactionId = request.transactionId
            result = await Self.beforeDeadline(request.deadline, clock: options.clock) {
                switch item.body {
                case .v2(let body): try await client.sendConsumptionInformation(transactionId: transactionId, body, in: environment)
                case .v1(let body): try await client.sendConsumptionInformationV1(transactionId: transactionId, body, in: environment)
                }
            }
        }
        let now = options.clock()
        switch result {
        case .success:
            request.status = .answered
            request.answeredAt = now
            request.dueAt = nil
            metrics.answered(after: now - request.receivedAt)
            logger.info("consumption request for transaction \(request.transactionId) answered (\(request.refundPreference ?? "no refund preference"))")
        case .failure(let error as PastDeadline):
            request.settle(.late, "\(error)")
            metrics.late()
            logger.warning("consumption request for transaction \(request.transactionId) late: \(error)")
        case .failure(let error) where Self.isPermanent(error):
            request.settle(.failed, "\(error)")
            metrics.failed()
            logger.error("consumption request for transaction \(request.transactionId) failed for good: \(error)")
        case .failure(let error):
            // Retry later (backoff doubles per attempt); the sweep after the deadline marks it late.
            let delay = options.retryDelay.clampedMilliseconds << Int64(min(max(request.attempts - 1, 0), 10))
            request.dueAt = min(now + delay, request.deadline)
            request.detail = "attempt \(request.attempts) failed: \(error)"
            metrics.retried()
            logger.warning("consumption request for transaction \(request.transactionId): \(request.detail ?? ""); trying again")
        }
        let settled = request
        do {
            try await onStore { try self.record(settled) }
        } catch {
            logger.error("consumption request for transaction \(request.transactionId): recording the result failed: \(error); the claim expires and it is tried again")
        }
    }

    /// Saves `request` unless the store moved on meanwhile (an answered one stays answered).
    private func record(_ request: ConsumptionRequestRecord) throws {
        try store.roles().withTransaction { transaction in
            let kept = try transaction.consumptionRequests(transactionId: request.transactionId).first { $0.requestedAt == request.requestedAt }
            if let kept, kept.status != .pending { return }
            var merged = request
            // Apple may have asked again (a repeat) or decided meanwhile: keep what transition wrote.
            if let kept {
                merged.repeats = kept.repeats
                merged.outcome = kept.outcome
                merged.outcomeAt = kept.outcomeAt
                merged.outcomeNotificationUUID = kept.outcomeNotificationUUID
            }
            try transaction.save(merged)
        }
    }

    private func lastResult(of request: ConsumptionRequestRecord) throws -> ConsumptionRequestRecord? {
        try store.roles().withTransaction { transaction in
            try transaction.consumptionRequests(transactionId: request.transactionId).first { $0.requestedAt == request.requestedAt }
        }
    }

    /// How often ``reportBacklogUntilCancelled()`` reads the backlog into the gauges.
    package static let gaugeInterval = Duration.seconds(5)

    /// Reads the backlog into the gauges now and every ``gaugeInterval`` until cancelled.
    ///
    /// Apart from the sweeps: a sweep waiting out Apple's Retry-After (or an answer retrying
    /// until its deadline) does not end, so gauges set only when it ended stayed at their value
    /// from before the question through exactly the wait `SignetConsumptionAnswerPending` is
    /// for. A failing store is reported by the sweeps.
    package func reportBacklogUntilCancelled() async {
        while !Task.isCancelled {
            try? await publishBacklog()
            try? await Task.sleep(for: Self.gaugeInterval)
        }
    }

    /// Sets the pending gauges from the store.
    private func publishBacklog() async throws {
        let now = options.clock()
        let recent = try await onStore {
            // Pending ones are at most a day old: after 12 hours a sweep marks them late.
            try self.store.roles().consumptionRequests(requestedSince: now - 2 * ConsumptionRequestRecord.answerWindow, limit: 100_000)
        }
        let pending = recent.filter { $0.status == .pending }
        metrics.backlog(count: pending.count, oldestAgeMilliseconds: pending.map(\.receivedAt).min().map { now - $0 })
    }

    private func onStore<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withTaskExecutorPreference(storeCalls) { try body() }
    }

    static func json(_ body: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(body), as: UTF8.self)
    }

    /// Apple refused the answer for good (a 4xx other than 401 and 429): sending it again
    /// would be refused again.
    static func isPermanent(_ error: any Error) -> Bool {
        if error is ConsumptionInformationError || error is Unreachable { return true }
        guard let error = error as? AppStoreAPIError else { return false }
        return error.kind == .permanent || error.kind == .invalidResponse
    }

    /// Runs `call`, abandoning it when `deadline` (ms since 1970) arrives first.
    static func beforeDeadline(
        _ deadline: Int64, clock: @escaping @Sendable () -> Int64, _ call: @escaping @Sendable () async throws -> Void
    ) async -> Result<Void, any Error> {
        let remaining = deadline - clock()
        guard remaining > 0 else { return .failure(PastDeadline()) }
        return await withTaskGroup(of: Result<Void, any Error>?.self) { group in
            group.addTask {
                do {
                    try await call()
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(remaining))
                return Task.isCancelled ? nil : .failure(PastDeadline())
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .failure(PastDeadline())
        }
    }

    struct PastDeadline: Error, CustomStringConvertible {
        var description: String { "the deadline (12 hours after Apple signed the request) passed while the answer was being sent" }
    }

    struct Unreachable: Error, CustomStringConvertible {
        var environment: AppStoreEnvironment
        var configured: AppStoreEnvironment
        var description: String {
            "the request came from \(environment.rawValue), which this \(configured.rawValue) API key does not reach"
        }
    }
}

extension ConsumptionRequestRecord {
    /// A final status with why; never acted on again.
    mutating func settle(_ status: Status, _ why: String) {
        self.status = status
        detail = why
        dueAt = nil
    }

    /// Claimed for sending `body` (JSON) until `until`.
    mutating func hold(until: Int64, body: String, note: String?) {
        attempts += 1
        dueAt = until
        answer = body
        detail = note
    }
}

extension ConsumptionResponder.SweepCounts {
    mutating func add(_ other: Self) {
        answered += other.answered
        skipped += other.skipped
        late += other.late
        failed += other.failed
        retrying += other.retrying
    }

    /// Counts the result recorded for one sent request.
    mutating func record(_ request: ConsumptionRequestRecord?) {
        switch request?.status {
        case .answered: answered += 1
        case .late: late += 1
        case .failed: failed += 1
        case .pending: retrying += 1
        default: break
        }
    }
}
