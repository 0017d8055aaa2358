import Synchronization
import SignetCore

/// Writes a source's checkpoint file (`signet backfill`'s, `signet reconcile`'s): on a
/// thread of its own, never an older snapshot over a newer one (commits and batches save
/// concurrently), and when throttled at most once per `interval`, each write being a write,
/// fsync and rename. A crash then redoes at most an interval's work, which dedupe and the
/// state machine make harmless; ``flush(_:)`` writes what throttling held back.
final class CheckpointWriter<Checkpoint: Sendable>: Sendable {
    private struct State {
        var lastSave: ContinuousClock.Instant?
        var unsaved = false
        var sequence = 0
    }

    private let path: String
    private let interval: Duration
    private let write: @Sendable (Checkpoint, String) throws -> Void
    private let executor: BlockingExecutor
    private let state = Mutex(State())
    /// The sequence number of the last snapshot written.
    private let written = Mutex<Int>(0)

    /// - Parameter write: writes a snapshot to a path (atomically: ``AtomicFile``).
    init(path: String, interval: Duration, label: String, write: @escaping @Sendable (Checkpoint, String) throws -> Void) {
        self.path = path
        self.interval = interval
        self.write = write
        self.executor = BlockingExecutor(label: label)
    }

    /// Runs blocking file work (reading the checkpoint at open) on the writer's thread.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await executor.run(body)
    }

    /// Writes `snapshot()` now, or, when `throttled` and the last write is younger than the
    /// interval, remembers that the file is behind. `snapshot` runs under the writer's lock,
    /// so snapshots are numbered in the order they were taken.
    func save(throttled: Bool = false, _ snapshot: () -> Checkpoint?) async throws {
        let interval = self.interval
        guard let (checkpoint, sequence) = state.withLock({ state -> (Checkpoint, Int)? in
            let now = ContinuousClock.now
            if throttled, interval > .zero, let last = state.lastSave, now - last < interval {
                state.unsaved = true
                return nil
            }
            guard let checkpoint = snapshot() else { return nil }
            state.lastSave = now
            state.unsaved = false
            state.sequence += 1
            return (checkpoint, state.sequence)
        }) else { return }
        let path = self.path
        try await executor.run { [self] in
            try written.withLock { last in
                guard sequence > last else { return }
                try write(checkpoint, path)
                last = sequence
            }
        }
    }

    /// Writes `snapshot()` if a throttled save held it back (at close).
    func flush(_ snapshot: () -> Checkpoint?) async throws {
        guard state.withLock({ $0.unsaved }) else { return }
        try await save(snapshot)
    }
}
