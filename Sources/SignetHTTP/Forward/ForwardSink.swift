import AsyncHTTPClient
import Foundation
package import Logging
import NIOCore
package import CoreMetrics
package import SignetCore
package import SignetState
import Synchronization

/// Passes the raw signed body of every verified notification on to other receivers
/// (`type: forward` under `sinks:`): a staging stack, another vendor, so that App Store
/// Connect's one URL per environment feeds several.
///
/// A write puts each body in a durable queue in the state store, one entry per receiver, in
/// one transaction, and is acknowledged then: a receiver that is down does not hold the
/// pipeline back. One deliverer per receiver (`ForwardDeliverer`) sends the queue in the
/// background, at least once: 2xx removes an entry; 408, 429, 5xx, timeouts and refused
/// connections are retried with backoff; another 4xx, or failing past `max_age`, writes it
/// to the sink's dead-letter file. The pipeline is held back only when a receiver's queue
/// already holds `max_pending` entries: then the write fails and the runner retries it (as
/// for any failing sink), so even then nothing is lost.
package final class ForwardSink: Sink {
    /// Where to forward and how hard to try.
    package struct Options: Sendable {
        /// The receivers, http:// or https:// URLs; each gets every body.
        package var urls: [String] = []
        /// The state store (by name in `stores:`) that holds the queue.
        package var store = "default"
        /// Per request, from connect to the last byte of the answer.
        package var timeout: Duration = .seconds(10)
        /// How long a body is retried before it is dead-lettered (Apple retries its own
        /// deliveries for about three days).
        package var maxAge: Duration = .seconds(3 * 86_400)
        /// Entries one receiver's queue may hold before writes fail (and the pipeline waits).
        package var maxPending = 100_000
        /// First retry delay; doubles per attempt.
        package var initialBackoff: Duration = .seconds(1)
        /// Longest retry delay.
        package var maxBackoff: Duration = .seconds(300)
        /// Entries claimed per round.
        package var batch = 32
        /// Requests in flight per receiver.
        package var concurrency = 4
        /// The longest wait between looks at the queue (another instance's entries, retries).
        package var pollInterval: Duration = .seconds(1)
        /// The dead-letter file; nil: `forward-dead-letters.ndjson` in the data directory.
        package var deadLetterPath: String?
        /// On close, how long to wait for the receivers that answer to get what is queued (a
        /// stdin run ends right after its last write); a failing receiver is not waited for.
        package var drainTimeout: Duration = .seconds(5)

        /// How long a claimed entry stays reserved for the instance sending it: past it, a
        /// crash's entries are sent again.
        var lease: Duration { max(timeout * 2, .seconds(30)) }

        package init() {}
    }

    package var input: SinkInput { .verifiedRaw }

    package let options: Options
    private let name: String
    private let storeProvider: @Sendable () throws -> any ForwardQueueStore
    private let deadLetters: ForwardDeadLetters
    private let metrics: ForwardMetrics
    private let logger: Logger
    private let executor: BlockingExecutor
    /// Woken by the deliverers after every settled batch (``drain(_:)`` waits on it).
    private let settled = WakeUp()
    private struct Running {
        var store: any ForwardQueueStore
        var client: HTTPClient
        var deliverers: [ForwardDeliverer]
        var tasks: [Task<Void, Never>]
    }

    private let running = Mutex<Running?>(nil)

    /// - Parameters:
    ///   - store: gives the open store when the sink opens (the pipeline opens stores first).
    ///   - logger: where it logs what it does and what fails.
    ///   - metrics: where its counters and gauges go.
    ///   - options: the component's settings (its `Options`); the defaults fit most uses.
    ///   - name: the sink's name in the pipeline, for metrics and logs.
    ///   - deadLetterPath: where refused and expired bodies go.
    package init(
        options: Options, name: String = "forward", store: @escaping @Sendable () throws -> any ForwardQueueStore, deadLetterPath: String,
        logger: Logger = Logger(label: "signet.forward"), metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.options = options
        self.name = name
        self.storeProvider = store
        self.deadLetters = ForwardDeadLetters(path: deadLetterPath)
        self.metrics = ForwardMetrics(sink: name, factory: metrics)
        self.logger = logger
        self.executor = BlockingExecutor(label: "signet.sink.\(name)")
    }

    package func open() async throws {
        guard running.withLock({ $0 == nil }) else { return }
        let store = try storeProvider()
        // The queue must be usable before anything is acknowledged into it.
        for url in options.urls {
            _ = try await executor.run { try store.forwardQueueStatus(target: url) }
            metrics.register(target: url)
        }
        try await deadLetters.open()
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: .nanoseconds(options.timeout.clampedNanoseconds)))
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let deliverers = options.urls.map {
            ForwardDeliverer(
                target: $0, options: options, store: store, client: client, executor: executor, deadLetters: deadLetters,
                metrics: metrics, settled: settled, logger: logger)
        }
        let tasks = deliverers.map { deliverer in Task { await deliverer.run() } }
        running.withLock { $0 = Running(store: store, client: client, deliverers: deliverers, tasks: tasks) }
        logger.info("forward '\(name)': \(options.urls.count) receivers (\(options.urls.joined(separator: ", "))), queue in store '\(options.store)'")
    }

    package func write(_ messages: [OutputMessage]) async throws {
        guard !messages.isEmpty else { return }
        guard let current = running.withLock({ $0 }) else { throw ForwardSinkError.notOpen }
        let (store, urls, limit) = (current.store, options.urls, options.maxPending)
        let bodies = messages.map(\.value)
        try await executor.run {
            for url in urls {
                let pending = try store.forwardQueueStatus(target: url).pending
                guard pending + bodies.count <= limit else { throw ForwardSinkError.queueFull(target: url, pending: pending, limit: limit) }
            }
            try store.enqueueForwards(bodies, targets: urls, at: WallClock.milliseconds())
        }
        for deliverer in current.deliverers {
            metrics.queued(bodies.count, target: deliverer.target)
            deliverer.wake()
        }
    }

    /// Stops the deliverers (a request in flight is abandoned: its entry is sent again once its
    /// lease ran out, at least once) and closes the client and the dead-letter file.
    package func close() async throws {
        guard let current = running.withLock({ state in defer { state = nil }; return state }) else { return }
        await drain(current)
        for task in current.tasks { task.cancel() }
        for task in current.tasks { await task.value }
        try await current.client.shutdown()
        try await deadLetters.close()
    }

    /// Waits, up to ``Options/drainTimeout``, until every receiver that is not failing has
    /// nothing queued.
    private func drain(_ current: Running) async {
        let deadline = ContinuousClock.now + options.drainTimeout
        let store = current.store
        while ContinuousClock.now < deadline {
            var waiting = false
            for deliverer in current.deliverers where !deliverer.isFailing {
                let target = deliverer.target
                let pending = (try? await executor.run { try store.forwardQueueStatus(target: target).pending }) ?? 0
                if pending > 0 {
                    waiting = true
                    deliverer.wake()
                }
            }
            guard waiting else { return }
            // Until a deliverer settled a batch (or the deadline): then look again.
            _ = try? await settled.wait(until: deadline)
        }
        logger.notice("forward '\(name)': closing with bodies still queued; the next run sends them")
    }

    /// The default dead-letter file in the data directory `environment` names.
    package static func defaultDeadLetterPath(environment: [String: String]) -> String {
        DataDirectory.file("forward-dead-letters.ndjson", environment: environment)
    }
}

/// Why a forward write failed.
package enum ForwardSinkError: Error, CustomStringConvertible {
    case notOpen
    /// A receiver's queue is full: the pipeline waits (the runner retries the write).
    case queueFull(target: String, pending: Int, limit: Int)

    package var description: String {
        switch self {
        case .notOpen: "the forward sink is not open"
        case .queueFull(let target, let pending, let limit):
            "forward: the queue for \(target) holds \(pending) bodies (max_pending \(limit)); the pipeline waits until it drains"
        }
    }
}
