public import SignetCore
import Synchronization

/// Logs process/acknowledge calls; optionally serves an outbox of undelivered records.
public final class LoggingStage: Stage {
    public let name: String
    private let log: EventLog
    private let outbox = Mutex<RecordBatch?>(nil)
    private let acknowledged = Mutex<[RecordBatch]>([])
    /// Appended to every active record's outputs' values (to show which stages a record passed).
    private let marker: String?
    private let failOnBatchContaining: Int64?

    public init(name: String, log: EventLog, marker: String? = nil, outbox: RecordBatch? = nil, failOnBatchContaining: Int64? = nil) {
        self.name = name
        self.log = log
        self.marker = marker
        self.outbox.withLock { $0 = outbox }
        self.failOnBatchContaining = failOnBatchContaining
    }

    public func process(_ batch: inout RecordBatch) async throws {
        log.append("process \(name):" + batch.records.map { String($0.position.offset) }.joined(separator: ",")
            + (batch.isRedelivery ? " (redelivery)" : ""))
        if let failOnBatchContaining, batch.records.contains(where: { $0.position.offset == failOnBatchContaining }) {
            throw TestFailure("stage \(name) lost its database")
        }
        if let marker {
            batch.forEachActive { record in
                for index in record.outputs.indices { record.outputs[index].value += Array(marker.utf8) }
            }
        }
    }

    public func acknowledge(_ batch: RecordBatch) async throws {
        acknowledged.withLock { $0.append(batch) }
        log.append("ack \(name):" + batch.records.map { String($0.position.offset) }.joined(separator: ",")
            + (batch.isRedelivery ? " (redelivery)" : ""))
    }

    public func undeliveredOutputs() async throws -> RecordBatch? {
        outbox.withLock { batch in
            defer { batch = nil }
            return batch
        }
    }

    public var acknowledgedBatches: [RecordBatch] { acknowledged.withLock { $0 } }
}
