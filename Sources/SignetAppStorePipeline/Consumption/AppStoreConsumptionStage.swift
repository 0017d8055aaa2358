public import Logging
public import SignetAppStoreAPI
public import SignetCore
public import SignetState
import AppStoreModels
import Synchronization

/// Answers Apple's refund questions by itself (service mode, docs/consumption.md): every
/// `interval` its `ConsumptionResponder` claims the CONSUMPTION_REQUESTs `transition` stored
/// and answers those whose customer consented, by the pipeline's `ConsumptionPolicy`.
///
/// Records pass through untouched; the answers go out beside the pipeline, within the process's
/// (and with PostgreSQL the cluster's) App Store API budget. The client is built when the stage
/// opens, so loading or linting a pipeline needs no credentials.
public final class AppStoreConsumptionStage: Stage {
    public struct Options: Sendable {
        /// Time between sweeps; zero turns the stage off (no API calls).
        public var interval: Duration = .seconds(10)
        package var responder = ConsumptionResponder.Options()

        public init() {}
    }

    public let name = "appstore_consumption"
    public let options: Options
    private let responder: ConsumptionResponder
    private let makeClient: @Sendable () throws -> AppStoreServerAPIClient
    private let logger: Logger
    private let sweeps = BackgroundSweeps()
    /// Keeps the backlog gauges current while the stage is open (``ConsumptionResponder/reportBacklogUntilCancelled()``).
    private let gauges = Mutex<Task<Void, Never>?>(nil)

    /// - Parameters:
    ///   - makeClient: builds the API client when the stage opens; the stage shuts it
    ///     down when it closes.
    ///   - options: the component's settings (its `Options`); the defaults fit most uses.
    ///   - logger: where it logs what it does and what fails.
    ///   - store: the state store it reads and writes.
    public init(
        options: Options, store: StateStoreResource, logger: Logger = Logger(label: "signet.consumption"),
        makeClient: @escaping @Sendable () throws -> AppStoreServerAPIClient
    ) {
        self.options = options
        self.logger = logger
        self.makeClient = makeClient
        self.responder = ConsumptionResponder(options: options.responder, store: store, logger: logger)
    }

    public func open() async throws {
        guard options.interval > .zero else {
            logger.info("appstore_consumption: interval is 0s; refund questions are kept, not answered")
            return
        }
        try sweeps.start(
            stage: name, interval: options.interval, makeClient: makeClient,
            announce: { [logger, options] configuration in
                let consent = options.responder.policy.consent == .ledger
                    ? "customers who consented in the ledger" : "every customer (all_customers_agreed_in_app_terms) but those who withdrew"
                logger.info(
                    "consumption answers every \(ConfigDuration.format(options.interval)) for \(consent) (\(configuration.environment.rawValue))")
            },
            sweep: { [responder, logger, options] client in
                do {
                    try await responder.sweep(client: client)
                } catch is CancellationError {
                    return false
                } catch {
                    if Task.isCancelled { return false }
                    logger.error("consumption sweep failed: \(error); the next, in \(ConfigDuration.format(options.interval)), tries again")
                }
                return true
            })
        let reporter = Task { [responder] in await responder.reportBacklogUntilCancelled() }
        gauges.withLock { $0 = reporter }
    }

    /// Wakes the responder when a record carries a new refund question (the stage sits after
    /// `transition`): it is answered now, not at the end of the interval.
    public func process(_ batch: inout RecordBatch) async throws {
        let asked = batch.records.contains { record in
            record[EntitlementEventsPart.self]?.contains { $0.type == .consumptionRequested } ?? false
        }
        if asked { sweeps.wake() }
    }

    public func close() async throws {
        let reporter = gauges.withLock { reporter in
            defer { reporter = nil }
            return reporter
        }
        reporter?.cancel()
        await reporter?.value
        try await sweeps.stop()
    }
}
