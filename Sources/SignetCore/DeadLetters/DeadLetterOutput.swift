public import Foundation

/// Where rejected records go, and in what shape.
public struct DeadLetterOutput: Sendable {
    /// `json`: one self-describing JSON object per reject (reason, detail, stage, source
    /// position, the input). `raw`: the input bytes unchanged as the value, with the
    /// reason in headers (for a Kafka dead-letter topic that replays into the input).
    public enum Format: String, Sendable, CaseIterable {
        /// A JSON object: reason, detail, stage, position and the input.
        case json
        /// The input bytes unchanged, the reason in headers.
        case raw
    }

    /// Where dead letters go.
    public var sink: any Sink
    /// How they are written.
    public var format: Format
    /// Inputs longer than this are cut in `json` records (the record says so and keeps the length).
    public var maxInputBytes: Int

    /// Dead letters to `sink` in `format`, input cut at `maxInputBytes`.
    public init(sink: any Sink, format: Format = .json, maxInputBytes: Int = 1 << 20) {
        self.sink = sink
        self.format = format
        self.maxInputBytes = maxInputBytes
    }

    /// The message that carries one rejected record.
    public func message(for record: Record, rejection: RecordRejection, stage: String, at time: Date = Date()) -> OutputMessage {
        let id = Self.stableId(input: record.raw, reason: rejection.reason.rawValue)
        let headers = [
            OutputMessage.Header(.reason, rejection.reason.rawValue),
            OutputMessage.Header(.detail, rejection.detail),
            OutputMessage.Header(.stage, stage),
            OutputMessage.Header(.source, record.position.description),
            OutputMessage.Header(.deadLetterId, id),
        ]
        switch format {
        case .raw:
            return OutputMessage(value: record.raw, headers: headers)
        case .json:
            var json = JSONText()
            json.beginObject()
            json.key("id"); json.string(id)
            json.key("reason"); json.string(rejection.reason.rawValue)
            json.key("detail"); json.string(rejection.detail)
            json.key("stage"); json.string(stage)
            json.key("source"); json.beginObject()
            json.key("stream"); json.string(record.position.stream)
            if let partition = record.position.partition {
                json.key("partition"); json.int(Int64(partition))
                json.key("offset"); json.int(record.position.offset)
            } else {
                json.key("line"); json.int(record.position.offset)
            }
            json.endObject()
            json.key("rejectedAt"); json.string(Self.timestamp(time))
            let originalLength = max(record[OriginalInputLengthPart.self] ?? 0, record.raw.count)
            json.key("inputBytes"); json.int(Int64(originalLength))
            let kept = record.raw.prefix(maxInputBytes)
            if let text = String(validating: kept, as: UTF8.self) {
                json.key("input"); json.string(text)
            } else {
                json.key("inputBase64"); json.string(Data(kept).base64EncodedString())
            }
            if kept.count < originalLength { json.key("truncated"); json.bool(true) }
            json.endObject()
            return OutputMessage(value: json.bytes, headers: headers)
        }
    }

    /// The same for every re-run of the same input line rejected for the same reason (re-runs
    /// dead-letter it again), so consumers can drop repeats: 128 bits as 32 hex digits, from
    /// two FNV-1a 64 hashes over the reason and the input bytes. Not a security hash: it only
    /// tells repeats apart, and both its inputs are in the record anyway.
    public static func stableId(input: [UInt8], reason: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        func mix(_ byte: UInt8) {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second ^= second >> 29
        }
        for byte in reason.utf8 { mix(byte) }
        mix(0)
        for byte in input { mix(byte) }
        let hex = { (value: UInt64) in
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return hex(first) + hex(second)
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
