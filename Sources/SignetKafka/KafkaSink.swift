import CRdKafka
public import Logging
public import SignetCore
import Synchronization

/// Publishes messages to one Kafka topic with an idempotent producer (`acks=all`).
///
/// ``write(_:)`` returns only after every message's delivery report arrived and all
/// succeeded; otherwise it throws and the runner retries the whole batch (the
/// idempotent producer and downstream dedupe by event id make the resend harmless).
/// The message key is `OutputMessage/key` (no key when nil, so librdkafka's
/// partitioner spreads them), its headers become Kafka headers. Also usable as the
/// dead-letter sink (`format: raw` gives the input bytes with `signet-*` headers).
public final class KafkaSink: Sink {
    public struct Options: Sendable {
        /// librdkafka properties, applied after ``KafkaSink/defaultProperties``; must
        /// include `bootstrap.servers`.
        public var properties: [KafkaProperty]
        public var topic: String

        public init(properties: [KafkaProperty], topic: String) {
            self.properties = properties
            self.topic = topic
        }

        /// The effective `message.timeout.ms` (`delivery_timeout`): the user's last setting
        /// over the default. It also bounds the wait for room in a full local queue.
        public var deliveryTimeout: Duration {
            let setting = (KafkaSink.defaultProperties + properties).last { $0.name == "message.timeout.ms" }
            return .milliseconds(setting.flatMap { Int64($0.value) } ?? 30_000)
        }
    }

    /// Applied before the user's properties. `message.timeout.ms` bounds one write:
    /// without it a write during a broker outage would wait librdkafka's default five
    /// minutes before failing and letting the runner's retry policy take over.
    public static let defaultProperties: [KafkaProperty] = [
        KafkaProperty("enable.idempotence", "true"),
        KafkaProperty("acks", "all"),
        KafkaProperty("message.timeout.ms", "30000"),
    ]

    public let options: Options
    private let logger: Logger
    private let client = Mutex<KafkaProducerClient?>(nil)
    private let closed = Atomic<Bool>(false)
    /// For the blocking flush at close (a GCD thread, not the cooperative pool).
    private let queue = BlockingExecutor(label: "signet.kafka.sink")

    public init(options: Options, logger: Logger = Logger(label: "signet.kafka")) {
        self.options = options
        self.logger = logger
    }

    deinit {
        // A sink dropped without close(): stop the delivery-report thread.
        client.withLock { $0 }?.close(timeout: .zero)
    }

    public func open() async throws {
        _ = try producer()
    }

    /// Produces every message and waits for all delivery reports.
    public func write(_ messages: [OutputMessage]) async throws {
        guard !messages.isEmpty else { return }
        let producer = try producer()
        let batch = DeliveryBatch(count: messages.count)
        let deadline = ContinuousClock.now + options.deliveryTimeout
        for message in messages {
            while true {
                let error = producer.produce(message, batch: batch)
                if error == RD_KAFKA_RESP_ERR_NO_ERROR { break }
                // librdkafka's local queue is full: wait for deliveries to drain it.
                if error == RD_KAFKA_RESP_ERR__QUEUE_FULL, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                    continue
                }
                batch.report(KafkaError("cannot enqueue message for '\(options.topic)'", error: error))
                break
            }
        }
        do {
            try await batch.wait()
        } catch {
            if let fatal = producer.fatalError {
                // An idempotent producer with a fatal error refuses further work:
                // start a fresh one (new producer id) for the runner's retry.
                logger.error("kafka: \(fatal); recreating the producer")
                client.withLock { if $0 === producer { $0 = nil } }
                queue.submit { producer.close(timeout: .zero) }
            }
            throw error
        }
    }

    /// Flushes what is outstanding (up to 10 s) and stops the producer.
    public func close() async throws {
        closed.store(true, ordering: .releasing)
        guard let producer = client.withLock({ $0.take() }) else { return }
        try await queue.run { producer.close(timeout: .seconds(10)) }
    }

    private func producer() throws -> KafkaProducerClient {
        try client.withLock { client in
            if let client { return client }
            guard !closed.load(ordering: .acquiring) else { throw KafkaError("the Kafka sink is closed") }
            let created = try KafkaProducerClient(
                properties: Self.defaultProperties + options.properties, topic: options.topic, logger: logger)
            client = created
            return created
        }
    }
}
