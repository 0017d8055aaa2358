import Synchronization

/// The outbox rows an instance emitted or claimed and its sinks have not acknowledged yet.
///
/// Shared by the calls of ``PostgresStateStore``, which may run at once on the sessions of
/// its pool: a transaction asks about a row when it meets it, not from a copy taken when
/// it began, and adds what it emits before its commit makes the rows visible to others.
final class InFlightSequences: Sendable {
    private let sequences = Mutex<Set<Int64>>([])

    func contains(_ sequence: Int64) -> Bool { sequences.withLock { $0.contains(sequence) } }

    func insert(_ added: some Sequence<Int64>) { sequences.withLock { $0.formUnion(added) } }

    func remove(_ removed: some Sequence<Int64>) { sequences.withLock { $0.subtract(removed) } }
}
