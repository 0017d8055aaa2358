import Synchronization

/// Hands batches from one pipeline step to the next (one sender, one receiver), merging
/// them while the receiver is busy.
///
/// This is what makes batch size adapt to load. A send never waits while the slot has
/// room: it appends to the batch already waiting there, up to `capacity` records. So at
/// a trickle every record travels alone (lowest latency), and when a step downstream is
/// slow the records queued behind it coalesce into one batch. That batch costs one
/// SQLite commit and one produce round trip instead of one per small batch, so the
/// queue drains instead of every record waiting behind one batch per stage. Memory
/// stays bounded: at most `capacity` records wait here.
///
/// Merging keeps source order (records are appended), and every record still passes
/// every stage exactly once, so stages see no difference except batch boundaries.
final class BatchHandoff: Sendable {
    /// What the receiver gets: records, or the ticker's call to tick (no records).
    enum Item: Sendable {
        case batch(RecordBatch)
        /// A ``StageTicker`` marked a tick due while the receiver had no batch.
        case tickDue
    }

    private struct Waiter<Value> {
        let id: UInt64
        let continuation: CheckedContinuation<Value, any Error>
    }

    private struct State {
        var pending: RecordBatch?
        var finished = false
        var failure: (any Error)?
        var receiver: Waiter<Item?>?
        /// The sender waiting for room, with the batch that did not fit.
        var sender: (waiter: Waiter<Void>, batch: RecordBatch)?
        var nextID: UInt64 = 0
        /// A ``StageTicker`` asked for the receiver's attention (see ``wake()``).
        var woken = false
    }

    /// The most records that wait in the slot (a single larger batch is still accepted).
    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Puts `batch` in the slot, merged into the one waiting there when it fits; waits
    /// for room otherwise. Returns without delivering when the task is cancelled (the
    /// runner cancels every step once one failed).
    func send(_ batch: RecordBatch) async {
        let id = newWaiterID()
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let resume: (() -> Void)? = state.withLock { state in
                        if Task.isCancelled || state.finished {
                            return { continuation.resume(throwing: CancellationError()) }
                        }
                        if let receiver = state.receiver {
                            // The receiver is idle, so the slot is empty: hand over directly.
                            state.receiver = nil
                            return {
                                receiver.continuation.resume(returning: .batch(batch))
                                continuation.resume()
                            }
                        }
                        if state.pending == nil {
                            state.pending = batch
                            return { continuation.resume() }
                        }
                        if state.pending!.count + batch.count <= capacity {
                            state.pending!.records.append(contentsOf: batch.records)
                            return { continuation.resume() }
                        }
                        state.sender = (Waiter(id: id, continuation: continuation), batch)
                        return nil
                    }
                    resume?()
                }
            } onCancel: {
                let waiter = state.withLock { state -> Waiter<Void>? in
                    guard let sender = state.sender, sender.waiter.id == id else { return nil }
                    state.sender = nil
                    return sender.waiter
                }
                waiter?.continuation.resume(throwing: CancellationError())
            }
        } catch {
            // Cancelled or the receiver is gone: the batch is not committed, so the next run reads it again.
        }
    }

    /// The next batch (everything that accumulated in the slot), or ``Item/tickDue``; nil
    /// once the sender finished and the slot is empty. Throws the sender's failure, or
    /// CancellationError.
    func next() async throws -> Item? {
        let id = newWaiterID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Item?, any Error>) in
                let resume: (() -> Void)? = state.withLock { state in
                    if let batch = state.pending {
                        state.pending = nil
                        state.woken = false
                        var wakeSender: Waiter<Void>?
                        if let sender = state.sender {
                            // The batch that did not fit takes the freed slot.
                            state.pending = sender.batch
                            state.sender = nil
                            wakeSender = sender.waiter
                        }
                        return {
                            continuation.resume(returning: .batch(batch))
                            wakeSender?.continuation.resume()
                        }
                    }
                    if let failure = state.failure { return { continuation.resume(throwing: failure) } }
                    if state.finished { return { continuation.resume(returning: nil) } }
                    if state.woken {
                        state.woken = false
                        return { continuation.resume(returning: .tickDue) }
                    }
                    if Task.isCancelled { return { continuation.resume(throwing: CancellationError()) } }
                    state.receiver = Waiter(id: id, continuation: continuation)
                    return nil
                }
                resume?()
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter<Item?>? in
                guard let receiver = state.receiver, receiver.id == id else { return nil }
                state.receiver = nil
                return receiver
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Tells a waiter's continuation apart from a later one in the cancellation handler.
    private func newWaiterID() -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
    }

    /// Gets the receiver's attention without a batch (a ``TickingStage``'s tick is due): an
    /// idle receiver gets ``Item/tickDue`` now; a busy one gets its next batch (or
    /// ``Item/tickDue``) without waiting. Never merges into or delays real batches.
    func wake() {
        let receiver = state.withLock { state -> Waiter<Item?>? in
            guard !state.finished else { return nil }
            guard let receiver = state.receiver else {
                state.woken = true
                return nil
            }
            state.receiver = nil
            return receiver
        }
        receiver?.continuation.resume(returning: .tickDue)
    }

    /// No more batches: the receiver gets what is pending, then nil.
    func finish() {
        close(failure: nil)
    }

    /// The sender failed: the receiver gets what is pending, then `error`.
    func fail(_ error: any Error) {
        close(failure: error)
    }

    private func close(failure: (any Error)?) {
        let receiver = state.withLock { state -> Waiter<Item?>? in
            guard !state.finished else { return nil }
            state.finished = true
            state.failure = failure
            guard state.pending == nil else { return nil }
            defer { state.receiver = nil }
            return state.receiver
        }
        guard let receiver else { return }
        if let failure {
            receiver.continuation.resume(throwing: failure)
        } else {
            receiver.continuation.resume(returning: nil)
        }
    }
}
