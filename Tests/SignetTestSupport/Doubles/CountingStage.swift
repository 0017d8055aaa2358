public import SignetCore
import Synchronization

/// Counts how often each record offset was processed (for parallelism checks).
public final class CountingStage: RecordStage {
    public let name = "count"
    public let parallelism: Int
    private let seen = Mutex<[Int64: Int]>([:])
    public init(parallelism: Int) { self.parallelism = parallelism }

    public func process(record: inout Record) throws(RecordRejection) {
        let offset = record.position.offset
        seen.withLock { $0[offset, default: 0] += 1 }
        // Some real work so that workers overlap.
        var hash: UInt64 = 1469598103934665603
        for byte in record.raw { hash = (hash ^ UInt64(byte)) &* 1099511628211 }
        record.outputs.append(OutputMessage(value: Array("\(offset):\(hash)".utf8)))
    }

    public var counts: [Int64: Int] { seen.withLock { $0 } }
}
