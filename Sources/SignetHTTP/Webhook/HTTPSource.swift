import HTTPTypes
import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import ServiceLifecycle
package import SignetAppStorePipeline
public import SignetCore
public import SignetState
import Synchronization

/// Apple's webhook as a pipeline source: App Store Server Notifications arrive as
/// `POST {"signedPayload": "..."}` on one path, and each request is answered only once
/// its record is committed (see `WebhookResponder` for every status code).
///
/// The server (Hummingbird, HTTP/1.1) starts in ``open()`` and stops in ``close()``, so
/// the source behaves like any other under `PipelineRunner`. ``stop()`` starts the
/// drain: new requests get 503 with `Retry-After` while queued ones are still committed.
public final class HTTPSource: Source, PushSource {
    /// The source's settings (YAML keys in `ComponentSpec/httpSource`).
    public struct Options: Sendable {
        /// Where to listen; port 0 picks a free port (see ``boundAddress``).
        public var address = ListenAddress(host: "127.0.0.1", port: 8080)
        /// The one path notifications are posted to.
        public var path = "/notifications"
        /// Largest accepted body; Apple's notifications are about 19 KB.
        public var maxBodyBytes = 64 << 10
        /// How long a connection may stay silent: headers not complete, or idle between requests.
        public var readTimeout: Duration = .seconds(10)
        /// How long a request body may take to arrive in full.
        public var bodyTimeout: Duration = .seconds(10)
        /// Open connections at most; more wait in the listen backlog.
        public var maxConnections = 256
        /// Records accepted and not yet committed at most; beyond it requests get 503.
        public var maxInFlight = 4096
        /// How long a request waits, at most, for others to share its batch (one state commit
        /// and one sink flush for all of them) when fewer than a batch are queued. Zero: each
        /// batch is taken at once, so a steady trickle of requests pays a commit each.
        public var batchLinger: Duration = .zero
        /// How long a request waits for its record's commit before it gets 503 (the record
        /// stays in the pipeline; the retry is deduplicated).
        public var responseTimeout: Duration = .seconds(25)
        /// The `Retry-After` of every 503.
        public var retryAfter: Duration = .seconds(5)
        /// Answer 503 (Apple retries) instead of 200 for a record dead-lettered for a
        /// configuration reason (`ReasonCode/configurationMismatches`).
        public var retryMisconfigured = false
        /// Where the app's own call is posted (`PurchaseEndpoint`); nil: not served.
        public var purchasesPath: String?
        /// The bearer token the app's call must carry (the entitlement API's); nil: none
        /// (allowed on loopback only).
        public var apiToken: String?

        public init() {}

        /// `Retry-After` in whole seconds (at least 1).
        var retryAfterSeconds: Int { max(1, Int(retryAfter.seconds.rounded(.up))) }
    }

    public let options: Options
    private let intake: WebhookIntake
    private let logger: Logger
    private let server = Mutex(ServerState())

    private struct ServerState: ~Copyable {
        var group: ServiceGroup?
        var task: Task<Void, any Error>?
        var bound: ListenAddress?
    }

    /// Where the server listens once it started, or why it could not.
    private let started = OneShot<Result<ListenAddress, any Error>>()

    /// The store the app's own call reads entitlements from (``Options/purchasesPath``).
    private let store: StateStoreResource?

    /// Apple's Get Retention Message requests, when the pipeline has a `retention:` section.
    private let retention = Mutex<RetentionResponder?>(nil)

    /// Serves `responder` at its policy's path from the next ``open()`` on.
    package func serve(retention responder: RetentionResponder) {
        retention.withLock { $0 = responder }
    }

    /// - Parameters:
    ///   - options: the listener's address, path, limits and timeouts; the defaults fit most uses.
    ///   - store: the pipeline's state store, for ``Options/purchasesPath``.
    ///   - logger: where the listener logs.
    public init(options: Options = Options(), store: StateStoreResource? = nil, logger: Logger = Logger(label: "signet.http")) {
        self.options = options
        self.store = store
        self.logger = logger
        self.intake = WebhookIntake(
            stream: "http:\(options.path)", purchaseStream: options.purchasesPath.map { "http:\($0)" },
            maxInFlight: options.maxInFlight, linger: options.batchLinger)
    }

    /// The address the server listens on once open (the real port when 0 was asked).
    public var boundAddress: ListenAddress? { server.withLock { $0.bound } }

    /// Whether requests are taken (false while draining and after close): for readiness.
    package var isAccepting: Bool { intake.isAccepting }

    /// Counts of accepted, refused and committed requests, and group commits.
    public var statistics: HTTPSourceStatistics {
        let counts = intake.statistics
        return HTTPSourceStatistics(
            accepted: counts.accepted, refused: counts.refused, committed: counts.committed,
            commits: counts.commits, inFlight: counts.inFlight)
    }

    public func open() async throws {
        var purchases: PurchaseEndpoint?
        if let path = options.purchasesPath, let store {
            purchases = PurchaseEndpoint(path: path, store: store, token: options.apiToken.map(BearerToken.init), logger: logger)
        }
        let responder = WebhookResponder(
            intake: intake, options: options, purchases: purchases, retention: retention.withLock { $0 }, logger: logger)
        // One per listener: its connections' guards and its connection limit share it.
        let idle = IdleConnections(listener: "webhook")
        let application = Application(
            responder: responder,
            server: GuardedHTTP1Channel.builder(
                idleTimeout: options.readTimeout,
                limits: .init(linger: .seconds(1), maxDiscardBytes: options.maxBodyBytes), idle: idle,
                // The responder only checks, queues and awaits: answered from the socket's thread.
                onEventLoop: true),
            configuration: ApplicationConfiguration(
                address: .hostname(options.address.host, port: options.address.port),
                serverName: "signet",
                backlog: ConnectionLimit.backlog,
                availableConnectionsDelegate: ConnectionLimit(options.maxConnections, idle: idle, logger: logger)),
            onServerRunning: { [self] channel in
                let port = channel.localAddress?.port ?? options.address.port
                serverStarted(ListenAddress(host: options.address.host, port: port))
            },
            logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [application], logger: logger))
        server.withLock { state in
            state.group = group
            state.task = Task { [self] in
                do {
                    try await group.run()
                    serverFailed(SourceError("the server stopped before it listened"))
                } catch {
                    serverFailed(error)
                    throw error
                }
            }
        }
        guard let address = try await started.wait()?.get() else { throw CancellationError() }
        logger.notice("webhook listening on http://\(address)\(options.path)")
        if let path = retention.withLock({ $0?.policy.path }) {
            logger.notice("retention requests answered on http://\(address)\(path)")
        }
    }

    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        try await intake.nextBatch(maxRecords: maxRecords)
    }

    /// The runner's first stage takes the requests' records straight from the intake's queue.
    package var input: RecordQueue<Record> { intake.queue }
    package var inputLinger: RecordQueueLinger { intake.linger > .zero ? .sinceOldest(intake.linger) : .none }

    /// Answers each record's request with its fate (processed, dead-lettered and why, dropped).
    public func commit(outcomes: [RecordOutcome]) async throws {
        intake.commit(outcomes)
    }

    /// For a caller without outcomes (an embedder's own loop): every request is answered as processed.
    public func commit(_ positions: [SourcePosition]) async throws {
        intake.commit(positions.map { RecordOutcome(position: $0, status: .active) })
    }

    public func stop() async {
        intake.stop()
    }

    /// Answers whatever is still waiting with 503 (it was not committed), then stops the
    /// server gracefully: responses being written finish, idle connections close.
    public func close() async throws {
        intake.close()
        let (group, task) = server.withLock { state in
            defer {
                state.group = nil
                state.task = nil
            }
            return (state.group, state.task)
        }
        await group?.triggerGracefulShutdown()
        _ = await task?.result
    }

    private func serverStarted(_ address: ListenAddress) {
        server.withLock { $0.bound = address }
        started.fulfill(.success(address))
    }

    /// The server ended before it listened: `open` throws. After it listened, nothing (the
    /// first result stands).
    private func serverFailed(_ error: any Error) {
        started.fulfill(.failure(
            ListenFailure.error(listener: "the webhook", address: "\(options.address)", setting: "source.address", cause: error)))
    }
}
