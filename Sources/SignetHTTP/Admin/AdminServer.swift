import Foundation
import HTTPTypes
import Hummingbird
public import Logging
import NIOCore
public import Prometheus
public import ServiceLifecycle
public import SignetAppStoreAPI
import SignetAppStorePipeline
public import SignetConsole
public import SignetCore
import SignetState

/// The listener every pipeline can have (its `http:` section): `GET /metrics`
/// (Prometheus text), `/healthz` (the process answers), `/readyz` (running, and every
/// component that reports health ready; 503 while starting or draining), and the
/// entitlement API `GET /v1/entitlements?originalTransactionId=…|appAccountToken=…`
/// `GET /v1/subscriptions/{originalTransactionId}` and `.../events`, with the JSON of
/// `signet entitlements`, `signet state show` and `signet state history`.
///
/// A ServiceLifecycle `Service`: run it in the same `ServiceGroup` as the pipeline;
/// graceful shutdown stops the listener.
public final class AdminServer: Service {
    public let configuration: AdminConfiguration
    private let pipeline: Pipeline
    private let health: PipelineHealth
    private let registry: PrometheusCollectorRegistry
    private let store: StateStoreResource?
    private let token: BearerToken?
    /// The In-App Purchase key `POST /v1/offers/signature` signs with, or why there is none.
    private let offerSigner: Result<OfferSigner, any Error>
    /// The support console under `/console`, when the pipeline has a `console:` section.
    private let console: Console?
    private let logger: Logger
    /// The port it bound, once it listens (tests bind port 0).
    private let listening = OneShot<Int>()

    /// Checks the bind policy (no API off loopback without a token) and finds the store.
    ///
    /// - Parameters:
    ///   - configuration: the `http:` section.
    ///   - pipeline: the pipeline it reports on (its store, its health).
    ///   - health: the pipeline's readiness.
    ///   - registry: where `/metrics` reads from.
    ///   - offerSigner: the In-App Purchase key `POST /v1/offers/signature` signs with, or why
    ///     there is none (the endpoint then answers 503 saying so).
    ///   - console: the support console to serve under `/console` (`Console.make(for:apiToken:environment:summary:deadLetters:metrics:logger:)`).
    ///   - logger: where the listener logs.
    public init(
        configuration: AdminConfiguration, pipeline: Pipeline, health: PipelineHealth,
        registry: PrometheusCollectorRegistry = PrometheusBackend.registry,
        offerSigner: Result<OfferSigner, any Error> = .failure(AdminServerError.noOfferKey),
        console: Console? = nil,
        logger: Logger = Logger(label: "signet.http")
    ) throws(AdminServerError) {
        try configuration.validate()
        self.configuration = configuration
        self.pipeline = pipeline
        self.health = health
        self.registry = registry
        self.offerSigner = offerSigner
        self.console = console
        self.logger = logger
        if let name = configuration.store {
            let resource = pipeline.resources.first { $0.name == name }?.resource
            guard let stateStore = resource as? StateStoreResource else { throw .storeMissing(name) }
            store = stateStore
        } else {
            store = nil
        }
        token = configuration.apiToken.flatMap { $0.isEmpty ? nil : BearerToken($0) }
    }

    /// The port the listener bound (useful with port 0), once it listens; nil when the task
    /// was cancelled before it did.
    public func boundPort() async -> Int? {
        await listening.wait()
    }

    public func run() async throws {
        let router = Router(context: OperatorRequestContext.self)
        console?.register(on: router)
        router.get("/metrics") { [registry] _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        router.get("/healthz") { _, _ in Self.text(.ok, "ok\n") }
        router.get("/readyz") { [pipeline, health] _, _ in
            let checks = await health.readiness(of: pipeline)
            let ready = checks.allSatisfy(\.isReady)
            let lines = checks.map { "\($0.component): \($0.isReady ? "ready" : "not ready") \($0.detail)\n" }
            return Self.text(ready ? .ok : .serviceUnavailable, lines.joined())
        }
        if let store {
            let offers = OfferSignatureService(store: { [store] in try store.store() }, signer: offerSigner)
            let api = EntitlementAPI(store: store, token: token, offers: offers, logger: logger)
            // Store reads block (a PostgreSQL round trip, a SQLite page read): on threads of
            // their own, so the cooperative pool keeps serving the webhook and /readyz; several,
            // so the store's connections answer in parallel.
            let reads = StoreReadExecutors(label: "signet.api.store", count: Self.storeReadParallelism)
            router.get("/v1/entitlements") { request, _ in
                await withTaskExecutorPreference(reads.next()) { api.entitlements(request) }
            }
            router.get("/v1/subscriptions/:originalTransactionId") { request, context in
                let id = context.parameters.get("originalTransactionId") ?? ""
                return await withTaskExecutorPreference(reads.next()) { api.subscription(request, originalTransactionId: id) }
            }
            router.get("/v1/subscriptions/:originalTransactionId/events") { request, context in
                let id = context.parameters.get("originalTransactionId") ?? ""
                return await withTaskExecutorPreference(reads.next()) { api.history(request, originalTransactionId: id) }
            }
            router.get("/v1/consent/:appTransactionId") { request, context in
                let id = context.parameters.get("appTransactionId") ?? ""
                return await withTaskExecutorPreference(reads.next()) { api.consent(request, appTransactionId: id) }
            }
            router.post("/v1/consent/:appTransactionId/clear") { request, context in
                let id = context.parameters.get("appTransactionId") ?? ""
                return await withTaskExecutorPreference(reads.next()) { api.clearConsent(request, appTransactionId: id) }
            }
            router.get("/v1/consumption/consent") { request, _ in
                await withTaskExecutorPreference(reads.next()) { api.consumptionConsent(request) }
            }
            router.post("/v1/consumption/consent") { request, _ in
                await withTaskExecutorPreference(reads.next()) { api.recordConsumptionConsent(request) }
            }
            router.get("/v1/consumption/requests") { request, _ in
                await withTaskExecutorPreference(reads.next()) { api.consumptionRequests(request) }
            }
            router.get("/v1/consumption/usage") { request, _ in
                await withTaskExecutorPreference(reads.next()) { api.consumptionUsage(request) }
            }
            router.post("/v1/consumption/usage") { request, _ in
                await withTaskExecutorPreference(reads.next()) { api.recordConsumptionUsage(request) }
            }
            router.get("/v1/consumption/report") { request, _ in
                await withTaskExecutorPreference(reads.next()) { api.consumptionReport(request) }
            }
            router.get("/v1/retention/report") { request, _ in
                await withTaskExecutorPreference(reads.next()) { api.retentionReport(request) }
            }
            router.get("/v1/customers/:query") { request, context in
                let query = context.parameters.get("query")?.removingPercentEncoding ?? ""
                return await withTaskExecutorPreference(reads.next()) { api.customer(request, query: query) }
            }
            router.post("/v1/offers/signature") { request, _ in
                if let refusal = api.authorize(request) { return refusal }
                var request = request
                guard let body = try? await request.collectBody(upTo: EntitlementAPI.maxOfferRequestBytes) else {
                    return EntitlementAPI.json(.contentTooLarge, #"{"error":"the body is larger than 16 KB"}"#)
                }
                return await withTaskExecutorPreference(reads.next()) { api.offerSignature(Array(buffer: body)) }
            }
        }
        let idle = IdleConnections(listener: "http")
        let app = Application(
            router: router,
            server: GuardedHTTP1Channel.builder(
                idleTimeout: configuration.idleTimeout, limits: .init(linger: .seconds(1), maxDiscardBytes: 64 << 10),
                idle: idle),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: nil, backlog: ConnectionLimit.backlog,
                availableConnectionsDelegate: ConnectionLimit(configuration.maxConnections, idle: idle, logger: logger)),
            onServerRunning: { [listening, logger] channel in
                logger.info("http: listening on \(channel.localAddress.map { "\($0)" } ?? "?")")
                listening.fulfill(channel.localAddress?.port ?? 0)
            },
            logger: logger)
        let sampling = console.map { console in Task { await console.sampleHistory() } }
        defer {
            sampling?.cancel()
            if let console { Task { await console.shutdown() } }
        }
        do {
            try await app.run()
        } catch where !listening.isFulfilled && !(error is CancellationError) {
            // Only a start that failed is a listen failure; a stop before it listened is not.
            throw ListenFailure.error(
                listener: "the operators' listener",
                address: "\(ListenAddress(host: configuration.host, port: configuration.port))",
                setting: "http.address", cause: error)
        }
    }

    static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}

extension AdminServer {
    /// How many of the API's store reads may block at once: beyond the PostgreSQL store's
    /// default pool of 2, so encoding one answer overlaps another's round trip; within SQLite's
    /// 8 readers. Two cores gain nothing from more.
    static let storeReadParallelism = 4
}
