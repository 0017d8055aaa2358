import Foundation
import SignetKafka
import SignetTestSupport
import Testing

extension KafkaEndToEndTests {
    /// Pipelines/kafka.yaml with a short delivery timeout on the events sink, so an outage makes
    /// writes fail (and the runner retry) within seconds instead of after 30 s.
    static func pipelineWithShortDeliveryTimeout(in scope: KafkaScope) throws -> String {
        let original = try String(contentsOfFile: KafkaInput.kafkaPipeline, encoding: .utf8)
        let anchor = "    topic: ${SIGNET_OUTPUT_TOPIC:entitlement-events}\n"
        guard original.contains(anchor) else { throw KafkaE2EFailure("Pipelines/kafka.yaml changed: no events sink topic line") }
        let copy = original.replacingOccurrences(of: anchor, with: anchor + "    delivery_timeout: 2s\n")
        let path = scope.path("kafka-short-delivery.yaml")
        try copy.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The events sink fails for a while, then recovers.
    ///
    /// 1. The output topic is unavailable (metadata answers UNKNOWN_TOPIC_OR_PARTITION) from the
    ///    start: writes fail and are retried; the process is SIGKILLed in the middle of it.
    /// 2. A new member of the same group with a FRESH data dir (so no outbox can hide a loss)
    ///    must re-read every record whose events were not delivered: offsets were not committed
    ///    past them.
    /// 3. While that member runs, the output topic's broker goes down (writes fail and are
    ///    retried, the source keeps reading), then comes back: the run recovers without losing
    ///    anything.
    @Test(.timeLimit(.minutes(10)))
    func sinkOutageThenRecovery() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("outage")
        defer { scope.close() }
        let reference = try KafkaReference(lines: input.lines.map(\.value), scope: scope, name: "outage")
        // Two brokers: the output topic lives on broker 2 alone, so taking broker 2 down fails
        // the sink while the source (broker 1, also the group's coordinator) keeps working.
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)], brokers: 2)
        for partition in Int32(0)..<4 {
            try cluster.setPartitionLeader(topic: "notifications", partition: partition, broker: 1)
            try cluster.setPartitionLeader(topic: "entitlements", partition: partition, broker: 2)
        }
        try cluster.setPartitionLeader(topic: "dead-letters", partition: 0, broker: 1)
        try cluster.setGroupCoordinator(group: "outage", broker: 1)
        let brokers = cluster.bootstrapServers
        let pipeline = try Self.pipelineWithShortDeliveryTimeout(in: scope)
        let half = input.lines.count / 2
        let firstHalf = Array(input.lines[..<half]), secondHalf = Array(input.lines[half...])

        // 1. Outage from the start; kill the member while it retries.
        try cluster.setTopicError("entitlements", error: 3)
        let doomedSettings = PipelineSettings(
            brokers: brokers, group: "outage", dataDir: scope.url.appendingPathComponent("doomed-data").path)
        let doomed = try scope.startPipeline("doomed", doomedSettings, pipeline: pipeline)
        try Kcat.produce(brokers: brokers, topic: doomedSettings.input, firstHalf)
        let failing = try await eventually(timeout: .seconds(90), interval: .milliseconds(200)) {
            doomed.stderr.components(separatedBy: "sink 'events' failed").count - 1 >= 2 || !doomed.isRunning
        }
        try #require(failing && doomed.isRunning, "the sink never failed twice: \(doomed.stderrTail())")
        doomed.send(SIGKILL)
        _ = try await doomed.waitForExit(timeout: .seconds(10))
        try cluster.setTopicError("entitlements", error: 0)
        #expect(try Kcat.readAll(brokers: brokers, topic: doomedSettings.output).isEmpty, "nothing may have been published during the outage")

        // 2. Fresh state, same group: everything of the first half must be read again.
        let dataDir = scope.url.appendingPathComponent("data")
        let settings = PipelineSettings(brokers: brokers, group: "outage", dataDir: dataDir.path)
        let recovering = try scope.startPipeline("recovering", settings, pipeline: pipeline)
        let firstIds = reference.ids(causedBy: firstHalf)
        var output: [KafkaMessage] = []
        let reread = try await eventually(timeout: .seconds(90), interval: .milliseconds(400)) {
            output = try Kcat.readAll(brokers: brokers, topic: settings.output)
            return firstIds.isSubset(of: distinctEventIds(output)) || !recovering.isRunning
        }
        #expect(reread, "offsets were committed past undelivered records: \(firstIds.subtracting(distinctEventIds(output)).count) of \(firstIds.count) first-half events never came back")

        // 3. The output topic's broker goes down before the second half arrives, so writes are
        //    certain to fail (and be retried) while the source keeps reading; then it comes back.
        let failuresBefore = recovering.stderr.components(separatedBy: "sink 'events' failed").count
        try cluster.setBrokerDown(2)
        try Kcat.produce(brokers: brokers, topic: settings.input, secondHalf)
        let failedAgain = try await eventually(timeout: .seconds(60), interval: .milliseconds(200)) {
            recovering.stderr.components(separatedBy: "sink 'events' failed").count > failuresBefore || !recovering.isRunning
        }
        #expect(failedAgain && recovering.isRunning, "the second outage never made a write fail: \(recovering.stderrTail())")
        try cluster.setBrokerUp(2)
        let complete = try await eventually(timeout: .seconds(120), interval: .milliseconds(400)) {
            output = try Kcat.readAll(brokers: brokers, topic: settings.output)
            return distinctEventIds(output).count >= reference.byId.count || !recovering.isRunning
        }
        #expect(complete, "after the outage only \(distinctEventIds(output).count)/\(reference.byId.count) events: \(recovering.stderrTail())")
        #expect(recovering.stderr.contains("sink 'events' recovered"), "no recovery logged: \(recovering.stderrTail())")
        recovering.send(SIGTERM)
        #expect(try await recovering.waitForExit(timeout: .seconds(30)) == 0, "exit: \(recovering.stderrTail())")
        output = try Kcat.readAll(brokers: brokers, topic: settings.output)
        try checkEvents(output, against: reference, allowDuplicates: true)
        try checkState(dataDir: dataDir, reference: reference)
    }
}
