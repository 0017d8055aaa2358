import Synchronization

/// Drives one ``TickingStage`` inside the runner: a task wakes the stage's input queue
/// every interval, and the stage's own task ticks when due, between batches. A tick that
/// falls due while the stage is busy runs right after the batch at hand; ticks never queue up.
final class StageTicker: Sendable {
    let stage: any TickingStage
    let interval: Duration
    private let due = Atomic<Bool>(false)

    /// Nil when `stage` does not tick.
    init?(_ stage: any Stage) {
        guard let ticking = stage as? any TickingStage, let interval = ticking.tickInterval, interval > .zero else { return nil }
        self.stage = ticking
        self.interval = interval
    }

    /// Marks a tick due every interval and wakes the stage (a ``DispatchTimer``); runs until
    /// cancelled.
    func wake(_ queue: RecordQueue<Record>) async {
        let timer = DispatchTimer.repeating(every: interval) { [self] in
            due.store(true, ordering: .releasing)
            queue.wake()
        }
        defer { timer.cancel() }
        // Until the runner cancels this task.
        _ = await OneShot<Void>().wait()
    }

    /// Runs the stage's tick if one is due; the records it produced, marked as generated.
    /// Whether a tick is due and not yet taken.
    var isDue: Bool { due.load(ordering: .acquiring) }

    func tickIfDue() async throws -> RecordBatch? {
        guard due.exchange(false, ordering: .acquiringAndReleasing) else { return nil }
        guard var batch = try await stage.tick(), !batch.records.isEmpty else { return nil }
        for index in batch.records.indices { batch.records[index][GeneratedRecordPart.self] = true }
        batch.isRedelivery = false
        return batch
    }
}
