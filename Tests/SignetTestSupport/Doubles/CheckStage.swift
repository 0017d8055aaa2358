public import SignetCore

/// Rejects lines containing "bad" (reason `test_bad`), drops lines containing "dup", and
/// emits `out:<line>` keyed by the line's offset for everything else.
public struct CheckStage: RecordStage {
    public var name: String
    public var parallelism: Int

    public init(name: String = "check", parallelism: Int = 1) {
        self.name = name
        self.parallelism = parallelism
    }

    public func process(record: inout Record) throws(RecordRejection) {
        let text = String(decoding: record.raw, as: UTF8.self)
        if text.contains("bad") { throw RecordRejection("test_bad", "line says bad: \(text)") }
        if text.contains("dup") {
            record.drop(reason: "duplicate")
            return
        }
        record.outputs.append(OutputMessage(key: Array(String(record.position.offset).utf8), value: Array("out:\(text)".utf8)))
    }
}
