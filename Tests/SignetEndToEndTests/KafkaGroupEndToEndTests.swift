import Foundation
import SignetKafka
import SignetPostgres
import SignetState
import SignetTestSupport
import Testing

/// Two `signet run` processes in one consumer group, as on two machines: each has its own
/// SIGNET_DATA_DIR, and they share only the state in PostgreSQL (SIGNET_DATABASE_URL switches
/// the shipped kafka pipeline to it), because a purchase's partition moves between them.
/// The server is the test process's ``PostgresServer``; each test has a database of its own.
extension KafkaEndToEndTests {
    /// Why the group tests cannot run here (nil when they can): only missing PostgreSQL binaries.
    static let groupSkipReason = PostgresServer.unavailableReason ?? ""

    /// A fresh database on the shared test server.
    static func groupDatabase() throws -> String { try PostgresServer.shared.get().makeDatabase("group") }

    /// Compares the shared PostgreSQL state with the single-instance reference run's SQLite state.
    static func checkSharedState(_ url: String, reference: KafkaReference, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let keys = reference.originalTransactionIds
        let want = try stateSnapshots(dataDir: reference.dataDir, keys: keys)
        let store = try PostgresStateStore.openReadOnly(url: url)
        defer { try? store.close() }
        let got = try stateSnapshots(store: store, keys: keys)
        let differing = keys.filter { want[$0] != got[$0] }
        #expect(differing.isEmpty, "state differs from the reference for \(differing.count) of \(keys.count) purchases, e.g. \(differing.prefix(1).map { "\($0): want \(want[$0] ?? "") got \(got[$0] ?? "")" })", sourceLocation: sourceLocation)
    }

    /// The second instance joins mid-stream (a cooperative rebalance moves partitions to it)
    /// and stays: no loss, duplicates only byte-identical, per-key order, state as the reference's.
    @Test(.enabled(if: PostgresServer.unavailableReason == nil, "PostgreSQL binaries missing"), .timeLimit(.minutes(10)))
    func secondInstanceJoinsMidStreamSharingPostgres() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("join")
        defer { scope.close() }
        let reference = try KafkaReference(lines: input.lines.map(\.value), scope: scope, name: "join")
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let database = try Self.groupDatabase()
        let settings = PipelineSettings(brokers: brokers, group: "join", dataDir: scope.path("data-first"))
        let other = ["SIGNET_DATABASE_URL": database, "SIGNET_DATA_DIR": scope.path("data-second")]
        let third = input.lines.count / 3

        let first = try scope.startPipeline("first", settings, extraEnvironment: ["SIGNET_DATABASE_URL": database])
        try Kcat.produce(brokers: brokers, topic: settings.input, Array(input.lines[..<third]))
        let flowing = try await eventually(timeout: .seconds(60), interval: .milliseconds(100)) {
            try Kcat.readAll(brokers: brokers, topic: settings.output).count >= 10 || !first.isRunning
        }
        try #require(flowing, "the first instance never published: \(first.stderrTail())")
        let second = try scope.startPipeline("second", settings, extraEnvironment: other)
        // Keep the stream going through the rebalance (a join takes about 3 s on the mock).
        try await producePaced(
            brokers: brokers, topic: settings.input, Array(input.lines[third...]), chunk: 10, pause: .milliseconds(250))

        var output: [KafkaMessage] = []
        let complete = try await eventually(timeout: .seconds(120), interval: .milliseconds(400)) {
            output = try Kcat.readAll(brokers: brokers, topic: settings.output)
            return distinctEventIds(output).count >= reference.byId.count || !first.isRunning || !second.isRunning
        }
        #expect(complete, "only \(distinctEventIds(output).count)/\(reference.byId.count) events; first: \(first.stderrTail(5)); second: \(second.stderrTail(5))")
        #expect(second.stderr.contains("kafka: assigned"), "the second instance never got partitions: \(second.stderrTail())")
        #expect(first.stderr.contains("kafka: revoked"), "no rebalance happened in the first instance: \(first.stderrTail())")

        second.send(SIGTERM)
        first.send(SIGTERM)
        #expect(try await second.waitForExit(timeout: .seconds(30)) == 0, "second: \(second.stderrTail())")
        #expect(try await first.waitForExit(timeout: .seconds(30)) == 0, "first: \(first.stderrTail())")
        output = try Kcat.readAll(brokers: brokers, topic: settings.output)
        try checkEvents(output, against: reference, allowDuplicates: true)
        try Self.checkSharedState(database, reference: reference)
        let delivered = try ["first", "second"].map { try scope.summary($0)["delivered"] as? Int ?? 0 }
        #expect(delivered[1] > 0, "the second instance delivered nothing after the rebalance")
    }

    /// The second instance joins, works, and leaves again (SIGTERM): its partitions return to the
    /// first instance, which continues the same purchases. Same checks as above.
    ///
    /// Regression: each process once trusted its snapshot cache after another process had
    /// written the shared file, overwriting that member's changes. The store now clears the
    /// cache whenever `PRAGMA data_version` shows another connection committed.
    @Test(.enabled(if: PostgresServer.unavailableReason == nil, "PostgreSQL binaries missing"), .timeLimit(.minutes(10)))
    func instanceLeavesAndPartitionsReturnSharingPostgres() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("leave")
        defer { scope.close() }
        let reference = try KafkaReference(lines: input.lines.map(\.value), scope: scope, name: "leave")
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let database = try Self.groupDatabase()
        let settings = PipelineSettings(brokers: brokers, group: "leave", dataDir: scope.path("data-first"))
        let other = ["SIGNET_DATABASE_URL": database, "SIGNET_DATA_DIR": scope.path("data-second")]
        let third = input.lines.count / 3
        let phases = [Array(input.lines[..<third]), Array(input.lines[third..<(2 * third)]), Array(input.lines[(2 * third)...])]

        func waitFor(_ lines: [InputLine], timeout: Duration = .seconds(40)) async throws -> Bool {
            let ids = reference.ids(causedBy: lines)
            return try await eventually(timeout: timeout, interval: .milliseconds(300)) {
                ids.isSubset(of: distinctEventIds(try Kcat.readAll(brokers: brokers, topic: settings.output)))
            }
        }

        let first = try scope.startPipeline("first", settings, extraEnvironment: ["SIGNET_DATABASE_URL": database])
        try Kcat.produce(brokers: brokers, topic: settings.input, phases[0])
        try #require(try await waitFor(phases[0]), "phase 1 incomplete: \(first.stderrTail())")

        // The second member joins and owns half the partitions for phase 2.
        let second = try scope.startPipeline("second", settings, extraEnvironment: other)
        let joined = try await eventually(timeout: .seconds(60), interval: .milliseconds(100)) {
            second.stderr.contains("kafka: assigned") && first.stderr.contains("kafka: revoked")
        }
        try #require(joined, "the second member never got partitions: \(second.stderrTail())")
        try Kcat.produce(brokers: brokers, topic: settings.input, phases[1])
        try #require(try await waitFor(phases[1]), "phase 2 incomplete")
        second.send(SIGTERM)
        #expect(try await second.waitForExit(timeout: .seconds(30)) == 0, "second: \(second.stderrTail())")
        let secondDelivered = try scope.summary("second")["delivered"] as? Int ?? 0
        #expect(secondDelivered > 0, "the second member did not process anything in phase 2")

        // Its partitions return to the first member, which continues the same purchases.
        try Kcat.produce(brokers: brokers, topic: settings.input, phases[2])
        // Nothing to wait for in between (no join): 20 s is ample for 80 notifications.
        _ = try await waitFor(phases[2], timeout: .seconds(20))
        first.send(SIGTERM)
        #expect(try await first.waitForExit(timeout: .seconds(30)) == 0, "first: \(first.stderrTail())")
        let output = try Kcat.readAll(brokers: brokers, topic: settings.output)
        try checkEvents(output, against: reference, allowDuplicates: true)
        try Self.checkSharedState(database, reference: reference)
    }

    /// One member crashes between committing its state (transition stage: snapshot, dedupe key
    /// and outbox row in SQLite) and the sink's acknowledgement; the other member of the group
    /// (same data dir) takes its partitions over. Every event must still reach the topic.
    ///
    /// Regression: the survivor once dropped the re-read records as duplicates, so events the
    /// crashed member had committed but not delivered stayed in the outbox. Now a duplicate
    /// whose outbox rows are undelivered (and not in flight in this process) re-emits them.
    @Test(.enabled(if: PostgresServer.unavailableReason == nil, "PostgreSQL binaries missing"), .timeLimit(.minutes(10)))
    func survivorDeliversWhatACrashedMemberCommittedToTheSharedState() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("crash-member")
        defer { scope.close() }
        let reference = try KafkaReference(lines: input.lines.map(\.value), scope: scope, name: "crash-member")
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let database = try Self.groupDatabase()
        let settings = PipelineSettings(brokers: brokers, group: "crash-member", dataDir: scope.path("data-victim"))
        // A short lease: the survivor redelivers the killed member's events once it expired.
        let pipeline = try scope.shortLeasePipeline()

        // The victim dies right after its first state commit (before any delivery).
        let victim = try scope.startPipeline(
            "victim", settings, pipeline: pipeline, extraEnvironment: ["SIGNET_FAULT": "after_state_commit:1", "SIGNET_DATABASE_URL": database])
        try await eventually(timeout: .seconds(40), interval: .milliseconds(100)) { victim.stderr.contains("kafka: assigned") }
        let survivor = try scope.startPipeline(
            "survivor", settings, pipeline: pipeline, extraEnvironment: ["SIGNET_DATABASE_URL": database, "SIGNET_DATA_DIR": scope.path("data-survivor")])
        let joined = try await eventually(timeout: .seconds(60), interval: .milliseconds(100)) {
            survivor.stderr.contains("kafka: assigned") && victim.stderr.contains("kafka: revoked")
        }
        try #require(joined, "the group never split: \(survivor.stderrTail())")
        try Kcat.produce(brokers: brokers, topic: settings.input, input.lines)
        let died = try await eventually(timeout: .seconds(60), interval: .milliseconds(50)) { !victim.isRunning }
        try #require(died && victim.stderr.contains("fault injection"), "the fault did not fire: \(victim.stderrTail())")

        // The survivor gets the victim's partitions after its session times out (4 s) and a rejoin.
        var output: [KafkaMessage] = []
        let complete = try await eventually(timeout: .seconds(60), interval: .milliseconds(500)) {
            output = try Kcat.readAll(brokers: brokers, topic: settings.output)
            return distinctEventIds(output).count >= reference.byId.count || !survivor.isRunning
        }
        let missing = Set(reference.byId.keys).subtracting(distinctEventIds(output))
        #expect(complete, "\(missing.count) events committed to the shared state by the crashed member were never published by the survivor")
        survivor.send(SIGTERM)
        #expect(try await survivor.waitForExit(timeout: .seconds(30)) == 0, "survivor: \(survivor.stderrTail())")
        let summary = try scope.summary("survivor")
        let duplicates = (summary["droppedByReason"] as? [String: Int])?["duplicate"] ?? 0
        if !missing.isEmpty {
            Issue.record("survivor dropped \(duplicates) re-read records as duplicates and committed them; the victim's outbox rows stay undelivered until some process restarts")
        }
        try checkEvents(output, against: reference, allowDuplicates: true)
        try Self.checkSharedState(database, reference: reference)
    }
}

extension KafkaScope {
    /// Pipelines/kafka.yaml with a 3 s outbox lease (the default 30 s would outlast the test).
    func shortLeasePipeline() throws -> String {
        let text = try String(contentsOfFile: KafkaInput.kafkaPipeline, encoding: .utf8)
        let marker = "    url: ${SIGNET_DATABASE_URL:}\n"
        guard text.contains(marker) else { throw KafkaE2EFailure("Pipelines/kafka.yaml has no 'url: ${SIGNET_DATABASE_URL:}' store line") }
        let path = path("kafka-short-lease.yaml")
        try text.replacingOccurrences(of: marker, with: marker + "    lease: 3s\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
