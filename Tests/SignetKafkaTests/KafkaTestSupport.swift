import Foundation
import Logging
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

/// What an external command printed.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs kcat (an independent Kafka client) with a hard timeout; kills it on expiry.
func kcat(_ arguments: [String], input: String? = nil, timeout: Duration = .seconds(20)) throws -> CommandResult {
    let result = try SignetProcess.run(
        executable: URL(fileURLWithPath: "/usr/bin/kcat"), arguments, stdin: Data((input ?? "").utf8),
        timeout: Double(timeout.components.seconds))
    guard result.exitCode != -1 else {
        throw KafkaError("kcat \(arguments.joined(separator: " ")) timed out; stderr: \(result.stderr)")
    }
    return CommandResult(status: result.exitCode, stdout: result.stdoutText, stderr: result.stderr)
}

/// Produces `key:value` lines into one partition with kcat.
func kcatProduce(_ cluster: MockCluster, topic: String, partition: Int32, lines: [String]) throws {
    let result = try kcat(
        ["-P", "-b", cluster.bootstrapServers, "-t", topic, "-p", "\(partition)", "-K:", "-X", "broker.address.family=v4"],
        input: lines.joined(separator: "\n") + "\n")
    #expect(result.status == 0, "kcat -P failed: \(result.stderr)")
}

/// Reads a whole topic with kcat as `key|value|headers` lines.
func kcatReadAll(_ cluster: MockCluster, topic: String) throws -> [String] {
    let result = try kcat([
        "-C", "-b", cluster.bootstrapServers, "-t", topic, "-e", "-o", "beginning", "-q",
        "-f", "%p|%k|%s|%h\n", "-X", "broker.address.family=v4",
    ])
    #expect(result.status == 0, "kcat -C failed: \(result.stderr)")
    return result.stdout.split(separator: "\n").map(String.init)
}

/// Consumer settings that suit the mock: a short session (the mock hangs below ~3 s),
/// and a short fetch wait so tests do not sit on the 500 ms default.
func consumerOptions(_ cluster: MockCluster, group: String, topics: [String], extra: [KafkaProperty] = []) -> KafkaSource.Options {
    KafkaSource.Options(
        properties: [
            KafkaProperty("bootstrap.servers", cluster.bootstrapServers),
            KafkaProperty("group.id", group),
            KafkaProperty("session.timeout.ms", "6000"),
            KafkaProperty("heartbeat.interval.ms", "1000"),
            KafkaProperty("fetch.wait.max.ms", "10"),
            KafkaProperty("broker.address.family", "v4"),
        ] + extra + (ProcessInfo.processInfo.environment["SIGNET_KAFKA_DEBUG"].map { [KafkaProperty("debug", $0)] } ?? []),
        topics: topics,
        pollTimeout: .milliseconds(100))
}

func sinkOptions(_ cluster: MockCluster, topic: String, extra: [KafkaProperty] = []) -> KafkaSink.Options {
    KafkaSink.Options(
        properties: [
            KafkaProperty("bootstrap.servers", cluster.bootstrapServers),
            KafkaProperty("linger.ms", "1"),
            KafkaProperty("broker.address.family", "v4"),
        ] + extra,
        topic: topic)
}

/// Test logger: warnings and up only, so librdkafka's chatter about downed brokers stays visible but short.
let testLogger: Logger = {
    var logger = Logger(label: "signet.kafka.test")
    logger.logLevel = ProcessInfo.processInfo.environment["SIGNET_KAFKA_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
    return logger
}()

/// Polls `source` until `done` says so or `timeout` passes; returns every batch polled.
/// With `commit`, commits each batch right away (as the runner would after the sinks acked).
func drain(
    _ source: KafkaSource, commit: Bool, timeout: Duration = .seconds(60), maxRecords: Int = 100,
    until done: ([Record]) -> Bool
) async throws -> [Record] {
    var all: [Record] = []
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline, !done(all) {
        guard let batch = try await source.nextBatch(maxRecords: maxRecords) else { break }
        if commit, !batch.isEmpty { try await source.commit(batch.map(\.position)) }
        all += batch
    }
    return all
}

/// Waits until the broker's committed offsets match `expected` (commits are async).
func awaitCommitted(
    _ source: KafkaSource, _ expected: [TopicPartition: Int64], timeout: Duration = .seconds(30)
) async throws -> [TopicPartition: Int64] {
    let deadline = ContinuousClock.now + timeout
    var last: [TopicPartition: Int64] = [:]
    while ContinuousClock.now < deadline {
        last = try await source.committedOffsets(Array(expected.keys))
        if last == expected { return last }
        try await Task.sleep(for: .milliseconds(50))
    }
    return last
}

extension Record {
    var text: String { String(decoding: raw, as: UTF8.self) }
    var topicPartition: TopicPartition { TopicPartition(position.stream, position.partition ?? -1) }
}

func uniqueName(_ prefix: String) -> String { "\(prefix)-\(UInt32.random(in: 0...UInt32.max))" }

/// The group's committed offsets as the broker says, read by a consumer that never joins the
/// group (``KafkaCommittedOffsets``): partitions without a commit are negative.
func brokerCommittedOffsets(_ cluster: MockCluster, group: String, _ partitions: [TopicPartition]) throws -> [TopicPartition: Int64] {
    let properties = [
        KafkaProperty("bootstrap.servers", cluster.bootstrapServers), KafkaProperty("group.id", group),
        KafkaProperty("broker.address.family", "v4"),
    ]
    return try KafkaCommittedOffsets.read(properties: properties, partitions: partitions, timeout: .seconds(5))
}

/// A one-partition topic holding `records` messages `k<n>:v<n>`.
func singlePartitionTopic(_ cluster: MockCluster, _ prefix: String, records: Int) throws -> String {
    let topic = uniqueName(prefix)
    try cluster.createTopic(topic, partitions: 1)
    try kcatProduce(cluster, topic: topic, partition: 0, lines: (0..<records).map { "k\($0):v\($0)" })
    return topic
}

/// Kafka protocol API keys and error codes the tests inject on the mock broker.
enum MockErrors {
    static let offsetCommit: Int16 = 8
    static let heartbeat: Int16 = 12
    static let illegalGeneration: Int32 = 22
    static let unknownMemberID: Int32 = 25
    static let rebalanceInProgress: Int32 = 27
}

/// Makes the coordinator fence `source` (its next Heartbeat answered `error`, ILLEGAL_GENERATION
/// or UNKNOWN_MEMBER_ID), so librdkafka reports the assignment lost, and polls until the member
/// has `rejoined` (been assigned again) or only lost it; returns whether that happened in time.
func fence(_ source: KafkaSource, on cluster: MockCluster, error: Int32, rejoined: Bool = true, maxRecords: Int = 10) async throws -> Bool {
    let before = source.rebalances
    try cluster.pushRequestErrors(apiKey: MockErrors.heartbeat, error: error, count: 1)
    let events = rejoined ? 2 : 1
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline, source.rebalances < before + events || (rejoined && source.assignment.isEmpty) {
        _ = try await source.nextBatch(maxRecords: maxRecords)
    }
    return source.rebalances >= before + events
}
