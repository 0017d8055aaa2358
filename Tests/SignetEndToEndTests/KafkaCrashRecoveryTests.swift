import Foundation
import SignetKafka
import SignetTestSupport
import Testing

extension KafkaEndToEndTests {
    /// SIGKILL mid-stream, restart with the same group and data dir: no event lost, repeats only
    /// as byte-identical copies, and no state change applied twice (`signet state show` of every
    /// purchase equals the reference's).
    @Test(.timeLimit(.minutes(10)))
    func sigkillMidStreamThenRestart() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("sigkill")
        defer { scope.close() }
        let reference = try KafkaReference(lines: input.lines.map(\.value), scope: scope, name: "sigkill")
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let dataDir = scope.url.appendingPathComponent("data")
        let settings = PipelineSettings(brokers: brokers, group: "sigkill", dataDir: dataDir.path)

        let first = try scope.startPipeline("first", settings)
        let split = input.lines.count * 2 / 3
        try Kcat.produce(brokers: brokers, topic: settings.input, Array(input.lines[..<split]))
        // Kill as soon as some events are out: the rest of the burst is in flight.
        var atKill = 0
        let started = try await eventually(timeout: .seconds(60), interval: .milliseconds(50)) {
            atKill = try Kcat.readAll(brokers: brokers, topic: settings.output).count
            return atKill >= 15 || !first.isRunning
        }
        first.send(SIGKILL)
        _ = try await first.waitForExit(timeout: .seconds(10))
        try #require(started && first.killedBySignal, "the first run never published: \(first.stderrTail())")
        let afterKill = try Kcat.readAll(brokers: brokers, topic: settings.output)
        #expect(distinctEventIds(afterKill).count < reference.byId.count, "the kill came too late to be mid-stream")

        try Kcat.produce(brokers: brokers, topic: settings.input, Array(input.lines[split...]))
        let second = try scope.startPipeline("second", settings)
        var output: [KafkaMessage] = []
        let complete = try await eventually(timeout: .seconds(120), interval: .milliseconds(400)) {
            output = try Kcat.readAll(brokers: brokers, topic: settings.output)
            return distinctEventIds(output).count >= reference.byId.count || !second.isRunning
        }
        #expect(complete, "after the restart only \(distinctEventIds(output).count)/\(reference.byId.count) events: \(second.stderrTail())")
        second.send(SIGTERM)
        #expect(try await second.waitForExit(timeout: .seconds(30)) == 0, "restart exit: \(second.stderrTail())")
        output = try Kcat.readAll(brokers: brokers, topic: settings.output)

        try checkEvents(output, against: reference, allowDuplicates: true)
        // State through the CLI, as an operator would look at it.
        var differing: [String] = []
        for key in reference.originalTransactionIds {
            let want = try SignetProcess.run(
                ["state", "show", "--database", reference.dataDir.appendingPathComponent("signet.sqlite").path,
                 "--original-transaction-id", key])
            let got = try SignetProcess.run(
                ["state", "show", "--database", dataDir.appendingPathComponent("signet.sqlite").path,
                 "--original-transaction-id", key])
            if want.exitCode != got.exitCode || want.stdout != got.stdout { differing.append(key) }
        }
        #expect(differing.isEmpty, "signet state show differs from the reference for \(differing.count) purchases: \(differing.prefix(3))")
        #expect(try Kcat.readAll(brokers: brokers, topic: settings.deadLetters).isEmpty)
    }

    /// SIGTERM mid-stream: exit 0 well within shutdown_timeout (30 s), everything read was
    /// delivered and committed (a kcat member of the group reads exactly the rest), and the
    /// restart neither re-reads nor re-emits anything: every event exactly once overall.
    @Test(.timeLimit(.minutes(10)))
    func sigtermDrainsCommitsAndRestartDoesNotReemit() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("sigterm")
        defer { scope.close() }
        let reference = try KafkaReference(lines: input.lines.map(\.value), scope: scope, name: "sigterm")
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let dataDir = scope.url.appendingPathComponent("data")
        let settings = PipelineSettings(brokers: brokers, group: "sigterm", dataDir: dataDir.path)

        let first = try scope.startPipeline("first", settings)
        // Only the first half goes in before the SIGTERM, so the signal is mid-stream by
        // construction (not by timing); the rest is produced once the first run has exited.
        let half = input.lines.count / 2
        let producer = Task {
            try await producePaced(brokers: brokers, topic: settings.input, Array(input.lines[..<half]), chunk: 20, pause: .milliseconds(100))
        }
        let started = try await eventually(timeout: .seconds(60), interval: .milliseconds(50)) {
            try Kcat.readAll(brokers: brokers, topic: settings.output).count >= 25 || !first.isRunning
        }
        try #require(started, "the first run never published: \(first.stderrTail())")
        let signalled = ContinuousClock.now
        first.send(SIGTERM)
        let status = try await first.waitForExit(timeout: .seconds(35))
        let shutdown = ContinuousClock.now - signalled
        #expect(status == 0 && !first.killedBySignal, "SIGTERM exit status \(String(describing: status)): \(first.stderrTail())")
        #expect(shutdown < .seconds(30), "shutdown took \(shutdown), more than shutdown_timeout")
        try await producer.value
        try await producePaced(brokers: brokers, topic: settings.input, Array(input.lines[half...]), chunk: 20, pause: .milliseconds(100))

        let summary = try scope.summary("first")
        let read = summary["read"] as? Int ?? -1
        let finished = (summary["passed"] as? Int ?? 0) + (summary["rejected"] as? Int ?? 0) + (summary["dropped"] as? Int ?? 0)
        #expect(read == finished, "records read but not finished at exit: \(summary)")
        #expect(read > 0 && read < input.lines.count, "the SIGTERM was not mid-stream (read \(read) of \(input.lines.count))")
        let firstOutput = try Kcat.readAll(brokers: brokers, topic: settings.output)
        #expect(distinctEventIds(firstOutput).count == firstOutput.count, "the first run published an event twice")

        // The group's committed offsets, seen by another client: a kcat member (no commits of its own).
        let uncommitted = try Kcat.readUncommitted(brokers: brokers, group: settings.group, topic: settings.input, timeout: .seconds(20))
        #expect(uncommitted.count == input.lines.count - read, "kcat in the group read \(uncommitted.count), expected \(input.lines.count - read) uncommitted")

        let second = try scope.startPipeline("second", settings)
        var output: [KafkaMessage] = []
        let complete = try await eventually(timeout: .seconds(120), interval: .milliseconds(400)) {
            output = try Kcat.readAll(brokers: brokers, topic: settings.output)
            return distinctEventIds(output).count >= reference.byId.count || !second.isRunning
        }
        #expect(complete, "after the restart only \(distinctEventIds(output).count)/\(reference.byId.count) events: \(second.stderrTail())")
        second.send(SIGTERM)
        #expect(try await second.waitForExit(timeout: .seconds(30)) == 0, "restart exit: \(second.stderrTail())")
        output = try Kcat.readAll(brokers: brokers, topic: settings.output)
        try checkEvents(output, against: reference, allowDuplicates: false)
        try checkState(dataDir: dataDir, reference: reference)

        let again = try scope.summary("second")
        #expect(again["read"] as? Int == input.lines.count - read, "the restart re-read committed records: \(again)")
        #expect((again["droppedByReason"] as? [String: Int])?["duplicate"] == nil, "the restart saw duplicates: \(again)")
        #expect(again["redelivered"] as? Int == 0, "the restart redelivered outbox events after a clean stop: \(again)")
    }
}
