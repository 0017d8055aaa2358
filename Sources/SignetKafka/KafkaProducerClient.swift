import CRdKafka
import Foundation
import Logging
import SignetCore
import Synchronization

/// The outcome of one ``KafkaSink/write(_:)``: counts delivery reports and resumes the
/// writer once all arrived.
///
/// Each produced message carries a retained reference to its batch as librdkafka's
/// per-message opaque; the delivery-report callback takes it back (releasing it), so a
/// batch lives exactly as long as some message of it is still in librdkafka.
final class DeliveryBatch: Sendable {
    private struct State {
        var remaining: Int
        var failures: [KafkaError] = []
        var continuation: CheckedContinuation<Void, any Error>?
    }

    private let state: Mutex<State>
    let total: Int

    init(count: Int) {
        total = count
        state = Mutex(State(remaining: count))
    }

    /// One message is done, successfully or not; resumes the writer after the last one.
    func report(_ failure: KafkaError?) {
        let resume: (CheckedContinuation<Void, any Error>, Result<Void, any Error>)? = state.withLock { state in
            if let failure { state.failures.append(failure) }
            state.remaining -= 1
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, Self.result(state))
        }
        if let (continuation, result) = resume { continuation.resume(with: result) }
    }

    /// Waits until every message reported.
    func wait() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let done: Result<Void, any Error>? = state.withLock { state in
                guard state.remaining > 0 else { return Self.result(state) }
                state.continuation = continuation
                return nil
            }
            if let done { continuation.resume(with: done) }
        }
    }

    private static func result(_ state: State) -> Result<Void, any Error> {
        guard let first = state.failures.first else { return .success(()) }
        return .failure(KafkaError("\(state.failures.count) message(s) not delivered; first: \(first.message)", code: first.code))
    }
}

/// What the producer's callbacks reach through the handle's opaque: the logger.
final class ProducerCallbacks: KafkaLogSink, Sendable {
    let logger: Logger
    init(logger: Logger) { self.logger = logger }

}

private let deliveryReportCallback: @convention(c) (
    OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?
) -> Void = { _, message, _ in
    guard let message, let opaque = message.pointee._private else { return }
    // Balances the passRetained in KafkaProducerClient.produce.
    let batch = Unmanaged<DeliveryBatch>.fromOpaque(opaque).takeRetainedValue()
    let error = message.pointee.err
    batch.report(error == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError("delivery failed", error: error))
}

/// A librdkafka producer writing to one topic, with a dedicated thread serving
/// delivery reports (`rd_kafka_poll`).
///
/// Thread safety (why `@unchecked Sendable` is sound): `handle` and `topic` are
/// immutable after init and librdkafka documents `rd_kafka_produceva`, `rd_kafka_poll`,
/// `rd_kafka_flush` and `rd_kafka_fatal_error` as callable from any thread; the only
/// mutable Swift state (`running`, `closed`) is atomic / behind a `Mutex`.
final class KafkaProducerClient: @unchecked Sendable {
    private let handle: OpaquePointer
    private let topic: OpaquePointer
    let topicName: String
    private let callbacks: ProducerCallbacks
    private let running = Atomic<Bool>(true)
    private let pollerDone = DispatchSemaphore(value: 0)
    private let closed = Mutex(false)

    init(properties: [KafkaProperty], topic topicName: String, logger: Logger) throws {
        let callbacks = ProducerCallbacks(logger: logger)
        let conf = KafkaConf()
        try conf.set(properties)
        rd_kafka_conf_set_dr_msg_cb(conf.raw, deliveryReportCallback)
        rd_kafka_conf_set_log_cb(conf.raw, kafkaLogCallback)
        // Unretained: `callbacks` is a stored property of this client, released only
        // after deinit destroyed the handle.
        rd_kafka_conf_set_opaque(conf.raw, Unmanaged.passUnretained(callbacks).toOpaque())
        let handle = try makeKafkaHandle(RD_KAFKA_PRODUCER, conf: conf, what: "Kafka producer")
        guard let topic = rd_kafka_topic_new(handle, topicName, nil) else {
            let error = rd_kafka_last_error()
            rd_kafka_destroy(handle)
            throw KafkaError("cannot create topic handle '\(topicName)'", error: error)
        }
        self.handle = handle
        self.topic = topic
        self.topicName = topicName
        self.callbacks = callbacks
        let thread = Thread { [self] in pollLoop() }
        thread.name = "signet.kafka.producer"
        thread.start()
    }

    deinit {
        // close() stopped the poller (which holds `self` strongly, so deinit can only
        // run after it ended); whatever is still queued is purged by destroy.
        rd_kafka_topic_destroy(topic)
        rd_kafka_destroy(handle)
    }

    /// Serves delivery reports until close().
    private func pollLoop() {
        while running.load(ordering: .acquiring) {
            rd_kafka_poll(handle, 100)
        }
        pollerDone.signal()
    }

    /// Enqueues one message (copied by librdkafka); its delivery report goes to `batch`.
    /// Returns librdkafka's error if it could not even be enqueued (no report follows).
    func produce(_ message: OutputMessage, batch: DeliveryBatch) -> rd_kafka_resp_err_t {
        let headers = rd_kafka_headers_new(message.headers.count)
        for header in message.headers {
            header.value.withUnsafeBytes { bytes in
                _ = rd_kafka_header_add(headers, header.name, -1, bytes.baseAddress, bytes.count)
            }
        }
        let opaque = Unmanaged.passRetained(batch).toOpaque()
        let error: rd_kafka_resp_err_t = message.value.withUnsafeBytes { value in
            withKey(message.key) { key in
                var fields: [rd_kafka_vu_t] = []
                var field = rd_kafka_vu_t()
                field.vtype = RD_KAFKA_VTYPE_RKT
                field.u.rkt = topic
                fields.append(field)
                field = rd_kafka_vu_t()
                field.vtype = RD_KAFKA_VTYPE_MSGFLAGS
                field.u.i = RD_KAFKA_MSG_F_COPY
                fields.append(field)
                field = rd_kafka_vu_t()
                field.vtype = RD_KAFKA_VTYPE_VALUE
                field.u.mem.ptr = UnsafeMutableRawPointer(mutating: value.baseAddress)
                field.u.mem.size = value.count
                fields.append(field)
                if let key {
                    field = rd_kafka_vu_t()
                    field.vtype = RD_KAFKA_VTYPE_KEY
                    field.u.mem.ptr = UnsafeMutableRawPointer(mutating: key.baseAddress)
                    field.u.mem.size = key.count
                    fields.append(field)
                }
                field = rd_kafka_vu_t()
                field.vtype = RD_KAFKA_VTYPE_HEADERS
                field.u.headers = headers
                fields.append(field)
                field = rd_kafka_vu_t()
                field.vtype = RD_KAFKA_VTYPE_OPAQUE
                field.u.ptr = opaque
                fields.append(field)
                guard let failure = rd_kafka_produceva(handle, fields, fields.count) else { return RD_KAFKA_RESP_ERR_NO_ERROR }
                let code = rd_kafka_error_code(failure)
                rd_kafka_error_destroy(failure)
                return code
            }
        }
        if error != RD_KAFKA_RESP_ERR_NO_ERROR {
            // Not enqueued: librdkafka took neither the headers nor the opaque.
            rd_kafka_headers_destroy(headers)
            Unmanaged<DeliveryBatch>.fromOpaque(opaque).release()
        }
        return error
    }

    private func withKey<T>(_ key: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> T) -> T {
        guard let key else { return body(nil) }
        return key.withUnsafeBytes { body($0) }
    }

    /// librdkafka's fatal error (an idempotent producer that can no longer guarantee
    /// ordering), if one was raised; the sink then replaces this client.
    var fatalError: KafkaError? {
        var text = [CChar](repeating: 0, count: 512)
        let code = rd_kafka_fatal_error(handle, &text, text.count)
        guard code != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        return KafkaError("fatal producer error: \(text.nulTerminatedString)", code: code.rawValue)
    }

    /// Waits for outstanding deliveries (up to `timeout`), stops the poller, and purges
    /// what is left so every pending write gets its (failed) report. Blocking; idempotent.
    func close(timeout: Duration) {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        let remaining = rd_kafka_flush(handle, milliseconds(timeout))
        if remaining != RD_KAFKA_RESP_ERR_NO_ERROR {
            callbacks.logger.warning("kafka: \(rd_kafka_outq_len(handle)) message(s) still undelivered at close; purging")
            _ = rd_kafka_purge(handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
            // Serve the purge reports (they release the batches and fail their writes).
            _ = rd_kafka_flush(handle, 1000)
        }
        running.store(false, ordering: .releasing)
        pollerDone.wait()
    }
}
