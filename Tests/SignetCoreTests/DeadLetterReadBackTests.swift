import Foundation
import SignetCore
import Testing
import SignetTestSupport

/// What `DeadLetterOutput` writes, `DeadLetterEntry` reads back: the input whole (text or
/// base64), or marked cut; and a replay plan keeps each distinct input once.
@Suite struct DeadLetterReadBackTests {
    func line(_ raw: [UInt8], _ reason: ReasonCode, maxInputBytes: Int = 1 << 20, offset: Int64 = 1) -> String {
        let output = DeadLetterOutput(sink: StdoutSink(), format: .json, maxInputBytes: maxInputBytes)
        let record = Record(raw: raw, position: SourcePosition(stream: "stdin", offset: offset))
        let message = output.message(for: record, rejection: RecordRejection(reason, "why \(reason.rawValue)"), stage: "verify")
        return String(decoding: message.value, as: UTF8.self)
    }

    @Test func writtenRecordsReadBackWithTheirInputs() throws {
        let text: [UInt8] = Array("{\"signedPayload\":\"é\"}".utf8)
        let binary: [UInt8] = [0x7B, 0xFF, 0x00, 0x7D]
        let long = Array(String(repeating: "x", count: 100).utf8)
        let file = [
            line(text, "invalid_signature"), "", line(binary, "malformed_json"), line(long, "malformed_json", maxInputBytes: 10),
            "{\"reason\":\"no id\"}", "not json", line(text, "invalid_signature"),
        ].joined(separator: "\n")
        let (entries, unreadable) = DeadLetterEntry.read(contentsOf: file)
        #expect(entries.map(\.line) == [1, 3, 4, 7])
        #expect(entries.map(\.input) == [text, binary, nil, text])
        #expect(entries.map(\.inputBytes) == [text.count, 4, 100, text.count])
        #expect(entries[0].reason == "invalid_signature" && entries[0].stage == "verify" && entries[0].detail == "why invalid_signature")
        #expect(entries[0].id == entries[3].id, "the same input refused for the same reason has the same id")
        #expect(unreadable.map(\.line) == [5, 6])

        let statistics = DeadLetterStatistics(entries, unreadable: unreadable.count)
        #expect(statistics.records == 4 && statistics.distinct == 3 && statistics.truncated == 1 && statistics.unreadableLines == 2)
        #expect(statistics.reasons.map(\.reason) == ["invalid_signature", "malformed_json"], "ties by name")
        #expect(statistics.reasons.map(\.distinct) == [1, 2])

        let plan = DeadLetterReplayPlan(entries.map { ("dl.ndjson", $0) }, reasons: [])
        #expect(plan.records.map(\.raw) == [text, binary])
        #expect(plan.records.map(\.position.description) == ["replay:dl.ndjson:1", "replay:dl.ndjson:3"])
        #expect(plan.repeats == 1 && plan.cut == 1 && plan.selected == 4)
        let onlyJSON = DeadLetterReplayPlan(entries.map { ("dl.ndjson", $0) }, reasons: ["malformed_json"])
        #expect(onlyJSON.records.map(\.raw) == [binary])
        #expect(onlyJSON.otherReasons == 2)
    }
}
