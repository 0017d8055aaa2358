public import SignetCore
import Synchronization

/// Passes records through and, every `interval`, generates one record (as an expiry
/// sweep does); its process waits `delay` per batch so that ticks fall due during a run.
public final class SweepingStage: TickingStage {
    public let name = "sweep"
    public let tickInterval: Duration?
    private let delay: Duration
    private let ticks = Mutex(0)

    public init(interval: Duration, delay: Duration) {
        tickInterval = interval
        self.delay = delay
    }

    public func process(_ batch: inout RecordBatch) async throws { try await Task.sleep(for: delay) }

    public func tick() async throws -> RecordBatch? {
        let number = ticks.withLock { ticks in
            ticks += 1
            return ticks
        }
        var record = Record(raw: Array("sweep\(number)".utf8), position: SourcePosition(stream: "sweep", offset: Int64(number)))
        record.outputs.append(OutputMessage(value: Array("swept:\(number)".utf8), headers: [.init(.eventType, "expired")]))
        return RecordBatch(records: [record])
    }

    public var tickCount: Int { ticks.withLock { $0 } }
}
