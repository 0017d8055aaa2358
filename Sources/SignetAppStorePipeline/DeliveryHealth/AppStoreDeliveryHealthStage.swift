import AppStoreModels
import Foundation
public import Logging
public import SignetAppStoreAPI
public import SignetCore
public import SignetState
public import CoreMetrics
import Metrics
import SignetJWS
import SignetOpenSSL
import Synchronization

/// Knows that Apple reaches the webhook (service mode, docs/operations.md): every `interval` it
/// asks Apple for a TEST notification (Request a Test Notification) and watches for it to come
/// back through the pipeline within `timeout`, polling Get Test Notification Status for Apple's
/// send attempts meanwhile.
///
/// It sees the TEST notification pass (put it after `verify`), or, with several instances
/// behind one URL, finds its dedupe key in the shared store (`transition` records it). A round
/// trip that fails is logged once at error with what was tried and what Apple said; each one's
/// result goes to /metrics and to `state_file`, which `signet appstore health` prints.
/// Records pass through untouched.
public final class AppStoreDeliveryHealthStage: Stage {
    public struct Options: Sendable {
        /// Time between round trips; zero turns the stage off (no API calls).
        public var interval: Duration = .seconds(3600)
        /// How long the TEST notification may take to come back.
        public var timeout: Duration = .seconds(120)
        /// How often Apple's status is asked meanwhile.
        public var poll: Duration = .seconds(5)
        /// Where the last round trips are kept (expanded when the stage opens).
        public var stateFile = "${SIGNET_DATA_DIR:signet-data}/delivery-health.json"
        /// The current time in ms since 1970 (tests inject their own).
        public var clock: @Sendable () -> Int64 = { WallClock.milliseconds() }

        public init() {}
    }

    public let name = "appstore_delivery_health"
    public let options: Options
    private let store: StateStoreResource?
    private let makeClient: @Sendable () throws -> AppStoreServerAPIClient
    private let logger: Logger
    private let environment: [String: String]
    private let sweeps = BackgroundSweeps()
    private let metrics: DeliveryHealthMetrics
    /// TEST notifications this pipeline saw pass: notificationUUID → when (bounded).
    private let seen = Mutex<[String: Int64]>([:])
    private let statePath = Mutex<String?>(nil)
    /// Store queries block (a server store): on a thread of their own.
    private let storeReads = BlockingExecutor(label: "signet.delivery-health.store")

    /// - Parameters:
    ///   - store: the shared store whose dedupe keys show a TEST notification another instance took (optional).
    ///   - environment: what `stateFile`'s variables expand to (the pipeline's: `ComponentContext.environment`).
    ///   - options: the component's settings (its `Options`); the defaults fit most uses.
    ///   - logger: where it logs what it does and what fails.
    ///   - makeClient: builds the App Store Server API client once the stage opens.
    ///   - metrics: where the round trips' figures go (default: the bootstrapped `MetricsSystem`).
    public init(
        options: Options, store: StateStoreResource?, environment: [String: String] = [:],
        logger: Logger = Logger(label: "signet.delivery-health"), metrics: any MetricsFactory = MetricsSystem.factory,
        makeClient: @escaping @Sendable () throws -> AppStoreServerAPIClient
    ) {
        self.metrics = DeliveryHealthMetrics(factory: metrics)
        self.options = options
        self.store = store
        self.environment = environment
        self.logger = logger
        self.makeClient = makeClient
    }

    /// The file the round trips are kept in, once the stage opened (the console reads it).
    package var stateFilePath: String? { statePath.withLock { $0 } }

    public func open() async throws {
        guard options.interval > .zero else {
            logger.info("appstore_delivery_health: interval is 0s; no round trips")
            return
        }
        let path = try Interpolator.expand(options.stateFile, environment: environment, path: name)
        statePath.withLock { $0 = path }
        await restoreLastSuccess(from: path)
        try sweeps.start(
            stage: name, interval: options.interval, makeClient: makeClient,
            announce: { [logger, options] configuration in
                logger.info(
                    "delivery health: a TEST notification round trip every \(ConfigDuration.format(options.interval)), back within \(ConfigDuration.format(options.timeout)) (\(configuration.environment.rawValue))")
            },
            sweep: { [self] client in
                do {
                    try await roundTrip(client: client)
                } catch is CancellationError {
                    return false
                } catch {
                    if Task.isCancelled { return false }
                    metrics.record(DeliveryRoundTrip(token: "", requestedAt: options.clock(), result: .failure), newAttempts: [])
                    logger.error("delivery health: could not ask Apple for a TEST notification: \(error)")
                }
                return true
            })
    }

    /// Notes every TEST notification that passes.
    public func process(_ batch: inout RecordBatch) async throws {
        for record in batch.records where record.isActive {
            guard case .notification(let notification)? = record[VerifiedPayloadPart.self],
                notification.payload.notificationType == .test, let uuid = notification.payload.notificationUUID
            else { continue }
            let now = options.clock()
            seen.withLock { seen in
                if seen.count > 1000 { seen.removeAll() }
                seen[uuid] = seen[uuid] ?? now
            }
        }
    }

    public func close() async throws {
        try await sweeps.stop()
    }

    /// One round trip now: asks, polls until the TEST notification was seen or `timeout`
    /// passed, then records the result (metrics, log, `stateFile` once the stage is open).
    @discardableResult
    package func roundTrip(client: AppStoreServerAPIClient) async throws -> DeliveryRoundTrip {
        let requestedAt = options.clock()
        let token = try await client.requestTestNotification().testNotificationToken
        var trip = DeliveryRoundTrip(token: token, requestedAt: requestedAt)
        let deadline = requestedAt + options.timeout.clampedMilliseconds
        var lastError: String?
        while trip.result == nil {
            do {
                let status = try await client.testNotificationStatus(token: token)
                trip.attempts = status.sendAttempts.map { .init(date: $0.attemptDate, result: $0.sendAttemptResult) }
                if trip.notificationUUID == nil { trip.notificationUUID = status.signedPayload.flatMap(Self.notificationUUID) }
                lastError = nil
            } catch let error as AppStoreAPIError where error.isTestNotificationNotFound {
                // Apple has not recorded it yet.
            } catch {
                if Task.isCancelled { throw CancellationError() }
                lastError = "\(error)"
            }
            if let uuid = trip.notificationUUID, let seenAt = try await seenAt(uuid) {
                trip.seenAt = seenAt
                trip.result = .success
            } else if options.clock() >= deadline {
                trip.result = .failure
                trip.detail = Self.diagnosis(trip, lastError: lastError, timeout: options.timeout)
            } else {
                try await Task.sleep(for: options.poll)
            }
        }
        metrics.record(trip, newAttempts: trip.attempts)
        switch trip.result {
        case .success:
            logger.info("delivery health: the TEST notification came back in \(Double(trip.latency ?? 0) / 1000) s")
        default:
            logger.error("delivery health: \(trip.detail ?? "round trip failed")")
        }
        if let path = statePath.withLock({ $0 }) {
            let finished = trip
            do {
                try await withTaskExecutorPreference(storeReads) { try DeliveryHealthFile.append(finished, to: path) }
            } catch {
                logger.warning("delivery health: could not write \(path): \(error)")
            }
        }
        return trip
    }

    /// Sets the last-success gauge from the round trips a previous run kept in `path`: without
    /// it a restarted process reports 0 ("never succeeded", which the stale alert ignores) until
    /// its next success, so a webhook Apple stopped reaching went unnoticed after every restart.
    private func restoreLastSuccess(from path: String) async {
        do {
            let trips = try await withTaskExecutorPreference(storeReads) { try DeliveryHealthFile.read(path) }
            if let last = trips.last(where: { $0.result == .success }) { metrics.restore(lastSuccess: last) }
        } catch {
            logger.warning("delivery health: could not read \(path), the last successful round trip is unknown until the next: \(error)")
        }
    }

    /// When this pipeline, or another instance sharing its store, saw notification `uuid`.
    private func seenAt(_ uuid: String) async throws -> Int64? {
        if let local = seen.withLock({ $0[uuid] }) { return local }
        guard let store else { return nil }
        let key = "n:" + uuid
        let recorded = try await withTaskExecutorPreference(storeReads) { try store.roles().containedKeys([key]) }
        return recorded.contains(key) ? options.clock() : nil
    }

    /// The id of a TEST notification's signed payload, read without verifying it: it only
    /// names which notification to look for; the webhook verifies what arrives.
    static func notificationUUID(_ signedPayload: String) -> String? {
        let parts = signedPayload.split(separator: ".")
        guard parts.count == 3, let bytes = try? Base64.decodeURL(String(parts[1])),
            let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else { return nil }
        return object["notificationUUID"] as? String
    }

    /// What a failed round trip says, for the operator who reads the log at 3 a.m.
    static func diagnosis(_ trip: DeliveryRoundTrip, lastError: String?, timeout: Duration) -> String {
        let results = trip.attempts.map { $0.result ?? "?" }
        let within = "within \(ConfigDuration.format(timeout)) (token \(trip.token))"
        if let lastError, trip.attempts.isEmpty {
            return "the TEST notification did not come back \(within); asking Apple for its status failed: \(lastError)"
        }
        if results.isEmpty {
            return "the TEST notification did not come back \(within) and Apple made no send attempt yet: check the App Store Server Notifications V2 URL in App Store Connect"
        }
        if results.contains("SUCCESS") {
            return "Apple delivered the TEST notification (attempts: \(results.joined(separator: ", "))) but this pipeline never saw it \(within): does the App Store Connect URL point at this deployment, or did a proxy answer for it?"
        }
        return "the TEST notification did not come back \(within): Apple's attempts failed (\(results.joined(separator: ", "))): is the webhook reachable from the internet, with a valid certificate, answering 200?"
    }
}
