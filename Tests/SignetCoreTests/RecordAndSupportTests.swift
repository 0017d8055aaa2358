import Foundation
import Synchronization
import Testing
import SignetTestSupport

@testable import SignetCore

@Suite("Records, positions, summaries and support code")
struct RecordAndSupportTests {
    enum CountKey: RecordPartKey { typealias Value = Int }
    enum NameKey: RecordPartKey { typealias Value = String }

    @Test func recordPartsAreTypedAndIndependent() {
        var record = Record(raw: [1, 2], position: SourcePosition(stream: "s", offset: 1))
        #expect(record[CountKey.self] == nil)
        record[CountKey.self] = 3
        record[NameKey.self] = "n"
        #expect(record[CountKey.self] == 3)
        #expect(record[NameKey.self] == "n")
        record[CountKey.self] = nil
        #expect(record[CountKey.self] == nil)
        #expect(record[NameKey.self] == "n")
    }

    @Test func rejectClearsOutputsAndTheFirstVerdictWins() {
        var record = Record(raw: [], position: SourcePosition(stream: "s", offset: 1))
        record.outputs = [OutputMessage(value: [1])]
        #expect(record.isActive)
        record.reject(RecordRejection("test_malformed", "first"), stage: "decode")
        #expect(record.outputs.isEmpty)
        record.reject(RecordRejection("test_forged", "second"), stage: "verify")
        record.drop(reason: "late")
        #expect(record.status == .rejected(RecordRejection("test_malformed", "first"), stage: "decode"))
        #expect(!record.isActive)

        var dropped = Record(raw: [], position: SourcePosition(stream: "s", offset: 2))
        dropped.outputs = [OutputMessage(value: [1])]
        dropped.drop(reason: "duplicate")
        dropped.reject(RecordRejection("test_malformed", "x"), stage: "decode")
        #expect(dropped.status == .dropped(reason: "duplicate"))
        #expect(dropped.outputs.isEmpty)
    }

    @Test func batchForEachActiveSkipsFinishedRecords() {
        var records = (1...4).map { Record(raw: [], position: SourcePosition(stream: "s", offset: $0)) }
        records[1].drop(reason: "d")
        records[2].reject(RecordRejection("x", "y"), stage: "s")
        var batch = RecordBatch(records: records)
        var visited: [Int64] = []
        batch.forEachActive { record in
            visited.append(record.position.offset)
            record.outputs.append(OutputMessage(value: [0]))
        }
        #expect(visited == [1, 4])
        #expect(batch.records.map(\.outputs.count) == [1, 0, 0, 1])
        #expect(batch.count == 4)
        #expect(!batch.isRedelivery)
    }

    @Test func recordStageSkipsInactiveRecordsAndRejectsWithItsName() async throws {
        var records = ["ok", "bad", "dup", "ok2"].enumerated().map {
            Record(raw: Array($0.element.utf8), position: SourcePosition(stream: "s", offset: Int64($0.offset + 1)))
        }
        records[3].drop(reason: "earlier")
        var batch = RecordBatch(records: records)
        try await CheckStage(name: "checker", parallelism: 4).process(&batch)
        #expect(batch.records[0].outputs.map { text($0.value) } == ["out:ok"])
        #expect(batch.records[1].status == .rejected(RecordRejection("test_bad", "line says bad: bad"), stage: "checker"))
        #expect(batch.records[2].status == .dropped(reason: "duplicate"))
        #expect(batch.records[3].status == .dropped(reason: "earlier"))
        #expect(batch.records[3].outputs.isEmpty)
    }

    @Test func sourcePositionDescriptions() {
        #expect(SourcePosition(stream: "stdin", offset: 12).description == "stdin:12")
        #expect(SourcePosition(stream: "topic", partition: 2, offset: 99).description == "topic[2]@99")
    }

    @Test func sourcePositionRoundTripsThroughCodable() throws {
        let position = SourcePosition(stream: "f", offset: 3, resumeByteOffset: 77)
        let decoded = try JSONDecoder().decode(SourcePosition.self, from: JSONEncoder().encode(position))
        #expect(decoded == position)
    }

    @Test func routing() {
        #expect(OutputMessage(value: []).isRouted(to: "any"))
        let routed = OutputMessage(value: [], routes: ["a", "c"])
        #expect(routed.isRouted(to: "a") && routed.isRouted(to: "c"))
        #expect(!routed.isRouted(to: "b"))
        #expect(!OutputMessage(value: [], routes: []).isRouted(to: "a"))
    }

    @Test func reasonCodesAndRejections() throws {
        #expect(ReasonCode.lineTooLarge.rawValue == "line_too_large")
        #expect(ReasonCode("custom") == ReasonCode(rawValue: "custom"))
        #expect(RecordRejection(.lineTooLarge, "bytes").description == "line_too_large: bytes")
        let encoded = try JSONEncoder().encode(ReasonCode("test_malformed"))
        #expect(String(decoding: encoded, as: UTF8.self) == "\"test_malformed\"")
    }

    @Test func runSummaryDescription() {
        var summary = RunSummary()
        summary.read = 10
        summary.passed = 6
        summary.rejected = 3
        summary.dropped = 1
        summary.delivered = 6
        summary.elapsedSeconds = 2
        summary.rejectedByReason = ["b_reason": 1, "a_reason": 2]
        summary.droppedByReason = ["duplicate": 1]
        #expect(summary.recordsPerSecond == 5)
        #expect(summary.description
            == "10 read, 6 passed, 3 rejected, 1 dropped, 6 delivered in 2.00 s (5/s); rejected: a_reason=2 b_reason=1; dropped: duplicate=1")
        summary.redelivered = 2
        summary.elapsedSeconds = 0.005
        #expect(summary.description.contains(", 2 redelivered from the outbox in 0.01 s"))
        #expect(RunSummary().recordsPerSecond == 0)
    }

    @Test func configErrorDescriptions() {
        let located = ConfigError("boom", at: ConfigLocation(file: "p.yaml", line: 3, column: 7))
        #expect(located.description == "p.yaml:3:7: error: boom")
        #expect(ConfigError("boom", at: nil).description == "error: boom")
        #expect(ConfigErrors([located, ConfigError("b", at: nil)]).description == "p.yaml:3:7: error: boom\nerror: b")
    }

    @Test func durationSeconds() {
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.seconds(-2).seconds == -2)
        #expect(Duration.zero.seconds == 0)
    }

    @Test(arguments: [1, 2, 3, 8])
    func concurrentUpdateTouchesEveryElementOnce(threads: Int) {
        var values = Array(repeating: 0, count: 10_001)
        values.concurrentUpdate(maxThreads: threads) { $0 += 1 }
        #expect(values.allSatisfy { $0 == 1 })
        var indexed = Array(0..<5_000)
        indexed.concurrentUpdate(maxThreads: threads) { $0 = $0 * 2 }
        #expect(indexed == (0..<5_000).map { $0 * 2 })
        var empty: [Int] = []
        empty.concurrentUpdate(maxThreads: threads) { $0 += 1 }
        #expect(empty.isEmpty)
    }

    @Test func faultInjectionKillsOnTheNthHit() async {
        await #expect(processExitsWith: .signal(SIGKILL)) {
            setenv("SIGNET_FAULT", "core_test_point:2", 1)
            FaultInjection.point("other_point")
            FaultInjection.point("core_test_point")
            FaultInjection.point("core_test_point")
            // Not reached when the fault fires.
        }
    }

    @Test func faultInjectionDoesNothingBeforeTheNthHitOrWithABadSpec() async {
        await #expect(processExitsWith: .success) {
            setenv("SIGNET_FAULT", "core_test_point:3", 1)
            FaultInjection.point("core_test_point")
            FaultInjection.point("core_test_point")
        }
        await #expect(processExitsWith: .success) {
            setenv("SIGNET_FAULT", "core_test_point:0", 1)
            FaultInjection.point("core_test_point")
            FaultInjection.point("core_test_point")
        }
    }
}
