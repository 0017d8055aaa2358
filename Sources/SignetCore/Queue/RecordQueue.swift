import Dispatch
import Synchronization

/// The one queue between the parts of a pipeline that run in their own tasks: the runner's
/// steps (source → stages → delivery), the webhook's requests and the runner, the App Store
/// fetchers and their source or stage, a line reader and its source, a forward sink's writes
/// and its deliverers (wake-ups only).
///
/// Bounded and back-pressured (producers wait while `capacity` elements are queued), taken in
/// batches by one consumer that may linger for more (``RecordQueueLinger``), woken without
/// elements for a tick, and ended from either side. The rules live in
/// ``RecordQueueStateMachine``, tested without tasks; this type only holds the lock, suspends
/// and resumes. Every waiter is resumed outside the lock, once.
package final class RecordQueue<Element: Sendable>: Sendable {
    /// What a take returns short of the end.
    package enum Taken: Sendable {
        /// Queued elements in order, at most the take's `max`. Empty only when a
        /// ``RecordQueueLinger/until(_:)`` deadline passed with nothing queued.
        case elements([Element])
        /// ``wake()`` was called while nothing was queued.
        case woken
    }

    private typealias Machine = RecordQueueStateMachine<
        Element, CheckedContinuation<Bool, Never>, CheckedContinuation<RecordQueueTake<Element>, Never>
    >

    private struct State: ~Copyable {
        var machine: Machine
        /// The waiting consumer's linger deadline (with the consumer's id), cancelled when it
        /// is resumed earlier.
        var timer: (consumer: UInt64, timer: DispatchTimer)?
        /// Tells one waiter's cancellation handler or timer from a later waiter's.
        var nextID: UInt64 = 0

        mutating func newID() -> UInt64 {
            nextID &+= 1
            return nextID
        }
    }

    private let state: Mutex<State>

    /// A queue holding at most `capacity` elements before producers wait.
    package init(capacity: Int) {
        state = Mutex(State(machine: Machine(capacity: capacity)))
    }

    /// Elements queued now.
    package var count: Int { state.withLock { $0.machine.count } }

    // MARK: - Producers

    /// Queues `elements`, waiting while the queue is full. False when they were not queued:
    /// the queue finished or stopped, or this task was cancelled while it waited. Either way
    /// nothing committed them, so a restart reads them again.
    @discardableResult
    package func send(_ elements: [Element]) async -> Bool {
        let (result, actions) = state.withLock { $0.machine.send(elements, now: .now) }
        perform(actions)
        switch result {
        case .accepted: return true
        case .refused: return false
        case .full: break
        }
        let id = state.withLock { $0.newID() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (producer: CheckedContinuation<Bool, Never>) in
                let actions = state.withLock {
                    $0.machine.waitForRoom(elements, producer: producer, id: id, cancelled: Task.isCancelled, now: .now)
                }
                perform(actions)
            }
        } onCancel: {
            perform(state.withLock { $0.machine.cancelProducer(id: id) })
        }
    }

    /// Queues one element (see ``send(_:)-([Element])``).
    @discardableResult
    package func send(_ element: Element) async -> Bool {
        await send([element])
    }

    /// Queues `elements` only if there is room now, never waiting (a caller that bounds what
    /// it admits itself, such as the webhook's in-flight limit).
    package func offer(_ elements: [Element]) -> Bool {
        let (result, actions) = state.withLock { $0.machine.send(elements, now: .now) }
        perform(actions)
        return result == .accepted
    }

    // MARK: - The consumer

    /// The next elements, at most `max`, lingering as `linger` says once some are queued; or
    /// ``Taken/woken``. Nil once finished and everything was taken, or after ``stop()``.
    /// Throws the failure ``finish(failure:)`` was given (after what was queued before it),
    /// or CancellationError when the task is cancelled while it waits.
    package func take(max: Int = .max, linger: RecordQueueLinger = .none) async throws -> Taken? {
        if let (taken, actions) = state.withLock({ $0.machine.take(max: max, linger: linger, now: .now) }) {
            perform(actions)
            return try Self.unwrap(taken)
        }
        let id = state.withLock { $0.newID() }
        let taken = await withTaskCancellationHandler {
            await withCheckedContinuation { (consumer: CheckedContinuation<RecordQueueTake<Element>, Never>) in
                let actions = state.withLock {
                    $0.machine.waitForElements(
                        consumer: consumer, id: id, max: max, linger: linger, cancelled: Task.isCancelled, now: .now)
                }
                perform(actions)
            }
        } onCancel: {
            perform(state.withLock { $0.machine.cancelConsumer(id: id) })
        }
        return try Self.unwrap(taken)
    }

    /// The next queued elements, at least one and at most `max` (lingering as `linger` says),
    /// passing over wakes and empty takes: what a consumer that has no ticks takes. Nil at the
    /// end; throws as ``take(max:linger:)``.
    package func nextElements(max: Int = .max, linger: RecordQueueLinger = .none) async throws -> [Element]? {
        while let taken = try await take(max: max, linger: linger) {
            if case .elements(let elements) = taken, !elements.isEmpty { return elements }
        }
        return nil
    }

    /// Every batch of ``nextElements(max:linger:)`` until the end, for `for try await`.
    package func batches(max: Int = .max, linger: RecordQueueLinger = .none) -> RecordQueueBatches<Element> {
        RecordQueueBatches(queue: self, max: max, linger: linger)
    }

    /// Up to `max` queued elements without waiting (none when nothing is queued).
    package func poll(max: Int = .max) -> [Element] {
        let (elements, actions) = state.withLock { $0.machine.poll(max: max, now: .now) }
        perform(actions)
        return elements
    }

    /// Gets the consumer's attention without elements (a ``TickingStage``'s tick is due): a
    /// waiting consumer takes what is queued now, or ``Taken/woken``; a busy one on its next take.
    package func wake() {
        perform(state.withLock { $0.machine.wake(now: .now) })
    }

    // MARK: - Ending

    /// No more elements: the consumer takes what is queued, then nil, or `failure` thrown.
    package func finish(failure: (any Error)? = nil) {
        perform(state.withLock { $0.machine.finish(failure: failure, now: .now) })
    }

    /// The consumer is done: queued elements are dropped, producers are refused from now on.
    package func stop() {
        perform(state.withLock { $0.machine.stop() })
    }

    // MARK: - Performing actions

    private static func unwrap(_ taken: RecordQueueTake<Element>) throws -> Taken? {
        switch taken {
        case .elements(let elements): return .elements(elements)
        case .woken: return .woken
        case .end: return nil
        case .failed(let error): throw error
        case .cancelled: throw CancellationError()
        }
    }

    /// Resumes whom the state machine named and arms its deadline; called outside the lock.
    private func perform(_ actions: Machine.Actions) {
        for (producer, accepted) in actions.producers { producer.resume(returning: accepted) }
        if let (consumer, taken) = actions.consumer {
            // Its deadline, if one was armed, has nothing left to end.
            state.withLock { state in
                defer { state.timer = nil }
                return state.timer?.timer
            }?.cancel()
            consumer.resume(returning: taken)
        }
        if let (id, instant) = actions.deadline {
            // A lingering take ends at its deadline at the latest. The timer holds the queue
            // weakly; a take that ended earlier cancels it (and, were it already firing, the
            // id no longer waits: a no-op).
            let timer = DispatchTimer.once(after: instant - .now) { [weak self] in
                guard let self else { return }
                perform(state.withLock { $0.machine.deadlinePassed(consumer: id, now: .now) })
            }
            // Kept unless a later consumer's is (this one was resumed, and took and waited
            // again, before this line ran): ids only grow, and the older timer is the one to drop.
            state.withLock { state -> DispatchTimer? in
                if let kept = state.timer, kept.consumer > id { return timer }
                defer { state.timer = (id, timer) }
                return state.timer?.timer
            }?.cancel()
        }
    }
}

/// The batches of one queue's consumer (``RecordQueue/batches(max:linger:)``).
package struct RecordQueueBatches<Queued: Sendable>: AsyncSequence, Sendable {
    package typealias Element = [Queued]
    let queue: RecordQueue<Queued>
    let max: Int
    let linger: RecordQueueLinger

    package struct AsyncIterator: AsyncIteratorProtocol {
        let batches: RecordQueueBatches
        package mutating func next() async throws -> [Queued]? {
            try await batches.queue.nextElements(max: batches.max, linger: batches.linger)
        }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(batches: self) }
}
