import CRdKafka
import Synchronization

/// An in-process Kafka cluster (librdkafka's mock broker) on 127.0.0.1, for
/// development (`signet dev-broker`) and tests. It speaks the real Kafka protocol, so
/// any client (kcat, Signet's source and sink) can use ``bootstrapServers``.
///
/// The mock needs an `rd_kafka_t` to live in; this class creates a producer handle for
/// it and owns both. librdkafka 2.0.2's mock listeners bind to `127.0.0.1` on
/// ephemeral ports and advertise that address (the tests check the listening sockets);
/// `init(brokers:)` checks that the bootstrap list is loopback-only and fails otherwise. Each partition
/// keeps only about 5 MiB, so a consumer that falls far behind loses data.
///
/// Thread safety (why `@unchecked Sendable` is sound): the mock cluster API is
/// thread-safe (each call is an op handed to the mock's own thread); the pointers are
/// only cleared in ``close()`` under a `Mutex`.
public final class MockCluster: @unchecked Sendable {
    private struct Handles {
        var client: OpaquePointer
        var cluster: OpaquePointer
    }

    private let handles: Mutex<Handles?>
    /// The broker ids (1...brokers).
    public let brokerIDs: [Int32]
    /// Comma-separated `127.0.0.1:port` list for `bootstrap.servers`.
    public let bootstrapServers: String
    /// The brokers' listening ports.
    private let ports: Set<UInt16>
    private let tcpNoDelay: Bool

    /// Starts `brokers` mock brokers.
    ///
    /// With `tcpNoDelay` the brokers' listening sockets get TCP_NODELAY, as a real Kafka
    /// broker's connections have: without it every produce acknowledgement waits for the
    /// client's delayed ACK (~40 ms). `signet dev-broker` turns it on; tests keep the mock as shipped.
    public init(brokers: Int = 1, tcpNoDelay: Bool = false) throws {
        guard (1...32).contains(brokers) else { throw KafkaError("a mock cluster needs 1 to 32 brokers, not \(brokers)") }
        let conf = KafkaConf()
        // No client traffic of its own: the handle only hosts the mock's thread.
        try conf.set(KafkaProperty("log_level", "3"))
        let client = try makeKafkaHandle(RD_KAFKA_PRODUCER, conf: conf, what: "mock cluster host")
        guard let cluster = rd_kafka_mock_cluster_new(client, Int32(brokers)) else {
            rd_kafka_destroy(client)
            throw KafkaError("cannot start the mock cluster")
        }
        let servers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        let hosts = servers.split(separator: ",").map { $0.split(separator: ":").first.map(String.init) ?? "" }
        guard hosts.allSatisfy({ $0 == "127.0.0.1" || $0 == "localhost" }) else {
            rd_kafka_mock_cluster_destroy(cluster)
            rd_kafka_destroy(client)
            throw KafkaError("the mock cluster did not bind to loopback only: \(servers)")
        }
        self.handles = Mutex(Handles(client: client, cluster: cluster))
        self.brokerIDs = (1...brokers).map(Int32.init)
        self.bootstrapServers = servers
        self.ports = Set(servers.split(separator: ",").compactMap { $0.split(separator: ":").last.flatMap { UInt16($0) } })
        self.tcpNoDelay = tcpNoDelay
        if tcpNoDelay { LoopbackNoDelay.apply(toListenersOn: ports) }
    }

    deinit { close() }

    /// Creates a topic (replication factor 1).
    public func createTopic(_ name: String, partitions: Int) throws {
        guard (1...10_000).contains(partitions) else { throw KafkaError("a topic needs 1 to 10000 partitions, not \(partitions)") }
        try call("cannot create topic '\(name)'") { rd_kafka_mock_topic_create($0, name, Int32(partitions), 1) }
    }

    /// Takes a broker down (its connections drop, requests fail) until ``setBrokerUp(_:)``.
    package func setBrokerDown(_ id: Int32) throws {
        try call("cannot take broker \(id) down") { rd_kafka_mock_broker_set_down($0, id) }
    }

    /// Brings a broker back.
    package func setBrokerUp(_ id: Int32) throws {
        try call("cannot bring broker \(id) up") { rd_kafka_mock_broker_set_up($0, id) }
        if tcpNoDelay { LoopbackNoDelay.apply(toListenersOn: ports) }  // in case the listener was recreated
    }

    /// Makes `broker` the leader of one partition (to fail one topic's broker and not another's).
    package func setPartitionLeader(topic: String, partition: Int32, broker: Int32) throws {
        try call("cannot move the leader of \(topic)[\(partition)]") {
            rd_kafka_mock_partition_set_leader($0, topic, partition, broker)
        }
    }

    /// Makes `broker` the coordinator of consumer group `group`.
    package func setGroupCoordinator(group: String, broker: Int32) throws {
        try call("cannot set the coordinator of group \(group)") { rd_kafka_mock_coordinator_set($0, "group", group, broker) }
    }

    /// Makes metadata requests for `topic` answer with `error` (a Kafka error code,
    /// e.g. 3 = UNKNOWN_TOPIC_OR_PARTITION) until called again with 0.
    package func setTopicError(_ topic: String, error: Int32) throws {
        try call("cannot set topic error") { cluster in
            rd_kafka_mock_topic_set_error(cluster, topic, rd_kafka_resp_err_t(rawValue: error))
            return RD_KAFKA_RESP_ERR_NO_ERROR
        }
    }

    /// Makes every request of `apiKey` (a Kafka protocol API key, e.g. 0 = Produce) fail
    /// with `error` (a Kafka error code) `count` times.
    package func pushRequestErrors(apiKey: Int16, error: Int32, count: Int) throws {
        let errors = [rd_kafka_resp_err_t](repeating: rd_kafka_resp_err_t(rawValue: error), count: count)
        try call("cannot inject errors") { cluster in
            errors.withUnsafeBufferPointer { rd_kafka_mock_push_request_errors_array(cluster, apiKey, count, $0.baseAddress) }
            return RD_KAFKA_RESP_ERR_NO_ERROR
        }
    }

    /// Drops the errors still queued for `apiKey` by ``pushRequestErrors(apiKey:error:count:)``.
    package func clearRequestErrors(apiKey: Int16) throws {
        try call("cannot clear injected errors") { cluster in
            rd_kafka_mock_clear_request_errors(cluster, apiKey)
            return RD_KAFKA_RESP_ERR_NO_ERROR
        }
    }

    /// Stops the brokers and frees the cluster (idempotent; also done by deinit).
    public func close() {
        guard let taken = handles.withLock({ $0.take() }) else { return }
        // The cluster lives in the handle: destroy it first.
        rd_kafka_mock_cluster_destroy(taken.cluster)
        rd_kafka_destroy(taken.client)
    }

    private func call(_ context: String, _ body: (OpaquePointer) -> rd_kafka_resp_err_t) throws {
        let result: rd_kafka_resp_err_t = try handles.withLock { handles in
            guard let handles else { throw KafkaError("\(context): the mock cluster is closed") }
            return body(handles.cluster)
        }
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(context, error: result) }
    }
}
