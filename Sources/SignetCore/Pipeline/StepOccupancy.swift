import Synchronization

/// How many records each of the runner's steps holds (stages `0..<n`, then delivery at `n`), so
/// that a stage may carry a small batch through every later step on its own thread when they
/// are all idle: a trickle of single requests then costs no wake-up of each later step's
/// thread, while the source keeps reading into the first queue behind it (so a backlog still
/// merges into bigger batches).
///
/// A producer counts records at the next step before it queues them, and a step uncounts
/// records once it passed them on, so "every later step holds nothing" means nothing is
/// queued or being processed there, and it stays so until the only producer for those steps,
/// the carrying stage, queues something again. A step's own work that no producer sent (a
/// ``TickingStage``'s tick) asks first and is refused while the step is being carried.
final class StepOccupancy: Sendable {
    private struct State {
        var records: [Int]
        /// Steps after this one are being carried by it.
        var carriedAfter: Int?
    }

    private let state: Mutex<State>

    /// Occupancy for `steps` steps, all empty.
    init(steps: Int) {
        state = Mutex(State(records: Array(repeating: 0, count: steps)))
    }

    /// `count` records are about to be queued for `step`.
    func add(_ count: Int, at step: Int) {
        state.withLock { $0.records[step] += count }
    }

    /// `step` passed `count` records on (or finished its own work).
    func remove(_ count: Int, at step: Int) {
        state.withLock { $0.records[step] -= count }
    }

    /// Claims every step after `step` for `step` to carry a batch through them: true when none
    /// holds a record and no other carry is under way. ``release()`` ends the claim.
    func claimSteps(after step: Int) -> Bool {
        state.withLock { state in
            guard state.carriedAfter == nil, state.records[(step + 1)...].allSatisfy({ $0 == 0 }) else { return false }
            state.carriedAfter = step
            return true
        }
    }

    /// Ends the claim ``claimSteps(after:)`` granted.
    func release() {
        state.withLock { $0.carriedAfter = nil }
    }

    /// `step`'s own task starts work no producer sent it (a tick), counted as one record until
    /// ``remove(_:at:)``; false, and nothing counted, while `step` is being carried.
    func beginOwnWork(at step: Int) -> Bool {
        state.withLock { state in
            if let carrier = state.carriedAfter, step > carrier { return false }
            state.records[step] += 1
            return true
        }
    }
}
