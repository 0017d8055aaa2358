/// The rules of a ``RecordQueue``, with no tasks, locks or clocks: every event is a method
/// that changes the state and returns the ``Actions`` its caller performs once the lock is
/// released (who to resume, with what; which deadline to arm). Tests drive it step by step
/// with plain values as the waiters.
///
/// One consumer takes elements in order, in batches; any number of producers add them.
/// - **Back-pressure**: producers wait while the queue holds `capacity` elements (a single
///   larger send into an empty queue is accepted whole), and are admitted in arrival order.
/// - **Linger**: a take may wait for more than the first element (``Linger``): until it has
///   `max` elements, or until a deadline, whichever comes first. A lingering consumer is
///   resumed once per batch, never at every element that arrives meanwhile.
/// - **Wake**: ``wake()`` gets an idle consumer's attention without elements (a stage's tick).
/// - **Ending**: ``finish(failure:)`` (producers are done: what is queued is still taken, then
///   the end or the failure) and ``stop()`` (the consumer is done: what is queued is dropped,
///   waiting producers are refused).
package struct RecordQueueStateMachine<Element: Sendable, Producer, Consumer> {
    package typealias Instant = ContinuousClock.Instant

    package typealias Linger = RecordQueueLinger
    package typealias Taken = RecordQueueTake<Element>

    /// What a send is told at once.
    package enum SendResult: Equatable {
        /// Queued.
        case accepted
        /// No room: the producer must wait (``waitForRoom(_:producer:id:cancelled:now:)``).
        case full
        /// Finished or stopped: the elements are not queued.
        case refused
    }

    /// What the caller does after releasing the lock.
    package struct Actions {
        /// The consumer to resume, with what it takes.
        package var consumer: (waiter: Consumer, taken: Taken)?
        /// Producers to resume: `true` when their elements were queued, `false` when refused.
        package var producers: [(waiter: Producer, accepted: Bool)] = []
        /// Arm a timer that calls ``deadlinePassed(consumer:now:)`` with this id at this instant.
        package var deadline: (consumer: UInt64, at: Instant)?

        package init() {}
    }

    private enum Phase {
        case open
        case finished((any Error)?)
        case stopped
    }

    private struct WaitingConsumer {
        var id: UInt64
        var waiter: Consumer
        var max: Int
        var linger: Linger
        /// The deadline a timer is armed for, so one is armed once per wait.
        var armed: Instant?
    }

    private struct WaitingProducer {
        var id: UInt64
        var waiter: Producer
        var elements: [Element]
    }

    /// Most elements queued before producers wait.
    package let capacity: Int
    private var elements: [Element] = []
    /// When the oldest queued element arrived (for ``Linger/sinceOldest(_:)``).
    private var oldestArrival: Instant?
    private var producers: [WaitingProducer] = []
    private var consumer: WaitingConsumer?
    private var woken = false
    private var phase = Phase.open

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Elements queued now.
    package var count: Int { elements.count }

    /// Whether sends are still accepted (neither finished nor stopped).
    package var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    // MARK: - Producers

    /// Queues `new` when there is room (and no earlier producer waits for it).
    package mutating func send(_ new: [Element], now: Instant) -> (SendResult, Actions) {
        guard isOpen else { return (.refused, Actions()) }
        guard producers.isEmpty, fits(new.count) else { return (.full, Actions()) }
        append(new, now: now)
        return (.accepted, consumerActions(now: now))
    }

    /// The producer `id` waits with `new` after a ``SendResult/full`` answer; resumed at once
    /// when room appeared meanwhile, or refused when the queue ended or its task was `cancelled`.
    package mutating func waitForRoom(_ new: [Element], producer: Producer, id: UInt64, cancelled: Bool, now: Instant) -> Actions {
        var actions = Actions()
        guard isOpen, !cancelled else {
            actions.producers.append((producer, false))
            return actions
        }
        if producers.isEmpty, fits(new.count) {
            append(new, now: now)
            actions = consumerActions(now: now)
            actions.producers.append((producer, true))
            return actions
        }
        producers.append(WaitingProducer(id: id, waiter: producer, elements: new))
        return actions
    }

    /// The waiting producer `id`'s task was cancelled: it is refused, its elements dropped.
    package mutating func cancelProducer(id: UInt64) -> Actions {
        var actions = Actions()
        guard let index = producers.firstIndex(where: { $0.id == id }) else { return actions }
        actions.producers.append((producers.remove(at: index).waiter, false))
        return actions
    }

    // MARK: - The consumer

    /// Takes elements without waiting: `nil` when the consumer must wait
    /// (``waitForElements(consumer:id:max:linger:cancelled:now:)``).
    package mutating func take(max: Int, linger: Linger, now: Instant) -> (Taken, Actions)? {
        precondition(consumer == nil, "a RecordQueue has one consumer: a second one took while the first waited")
        guard case .ready(let taken) = evaluate(max: max, linger: linger, now: now) else { return nil }
        return (taken, admitProducers(now: now))
    }

    /// Up to `max` queued elements, without waiting, lingering or ending: none when nothing is queued.
    package mutating func poll(max: Int, now: Instant) -> ([Element], Actions) {
        guard !elements.isEmpty else { return ([], Actions()) }
        let taken = removeFirst(max)
        return (taken, admitProducers(now: now))
    }

    /// The consumer `id` waits after ``take(max:linger:now:)`` returned nil; resumed at once
    /// when elements arrived meanwhile, or cancelled when its task was `cancelled`.
    package mutating func waitForElements(
        consumer waiter: Consumer, id: UInt64, max: Int, linger: Linger, cancelled: Bool, now: Instant
    ) -> Actions {
        var actions = Actions()
        switch evaluate(max: max, linger: linger, now: now) {
        case .ready(let taken):
            actions = admitProducers(now: now)
            actions.consumer = (waiter, taken)
        case .wait(let deadline):
            if cancelled {
                actions.consumer = (waiter, .cancelled)
                return actions
            }
            // Replacing the waiting consumer would leave it suspended for ever.
            precondition(consumer == nil, "a RecordQueue has one consumer: a second one waited while the first did")
            consumer = WaitingConsumer(id: id, waiter: waiter, max: max, linger: linger, armed: deadline)
            if let deadline { actions.deadline = (id, deadline) }
        }
        return actions
    }

    /// A timer armed for consumer `id` fired: it takes what is queued if its linger is over.
    package mutating func deadlinePassed(consumer id: UInt64, now: Instant) -> Actions {
        guard consumer?.id == id else { return Actions() }
        consumer?.armed = nil
        return consumerActions(now: now)
    }

    /// The waiting consumer `id`'s task was cancelled.
    package mutating func cancelConsumer(id: UInt64) -> Actions {
        var actions = Actions()
        guard let waiting = consumer, waiting.id == id else { return actions }
        consumer = nil
        actions.consumer = (waiting.waiter, .cancelled)
        return actions
    }

    /// Gets the consumer's attention: a waiting one takes what is queued now (lingering or
    /// not), or ``Taken/woken`` when nothing is; otherwise its next take does.
    package mutating func wake(now: Instant) -> Actions {
        guard isOpen else { return Actions() }
        guard let waiting = consumer else {
            woken = true
            return Actions()
        }
        consumer = nil
        var actions = Actions()
        if elements.isEmpty {
            actions.consumer = (waiting.waiter, .woken)
        } else {
            woken = false
            let taken = removeFirst(waiting.max)
            actions = admitProducers(now: now)
            actions.consumer = (waiting.waiter, .elements(taken))
        }
        return actions
    }

    // MARK: - Ending

    /// No more elements: the consumer takes what is queued, then ``Taken/end`` (or
    /// ``Taken/failed(_:)`` with `failure`). Producers still waiting are refused.
    package mutating func finish(failure: (any Error)? = nil, now: Instant) -> Actions {
        guard isOpen else { return Actions() }
        phase = .finished(failure)
        var actions = consumerActions(now: now)
        actions.producers += producers.map { ($0.waiter, false) }
        producers = []
        return actions
    }

    /// The consumer is done: what is queued is dropped, waiting producers are refused, a
    /// waiting consumer gets ``Taken/end``.
    package mutating func stop() -> Actions {
        if case .stopped = phase { return Actions() }
        phase = .stopped
        elements = []
        oldestArrival = nil
        var actions = Actions()
        actions.producers = producers.map { ($0.waiter, false) }
        producers = []
        if let waiting = consumer {
            consumer = nil
            actions.consumer = (waiting.waiter, .end)
        }
        return actions
    }

    // MARK: - Rules

    private enum Evaluation {
        case ready(Taken)
        /// Wait, until this deadline when there is one.
        case wait(Instant?)
    }

    /// The one rule for what a take gets now. Takes `max` elements when the queue has them,
    /// the linger is over or the queue ended; otherwise waits.
    private mutating func evaluate(max: Int, linger: Linger, now: Instant) -> Evaluation {
        switch phase {
        case .stopped:
            return .ready(.end)
        case .finished(let failure):
            if !elements.isEmpty { return .ready(.elements(removeFirst(max))) }
            if let failure { return .ready(.failed(failure)) }
            return .ready(.end)
        case .open:
            break
        }
        if !elements.isEmpty {
            woken = false
            let deadline = lingerDeadline(linger)
            if elements.count >= max || deadline.map({ $0 <= now }) ?? true {
                return .ready(.elements(removeFirst(max)))
            }
            return .wait(deadline)
        }
        if woken {
            woken = false
            return .ready(.woken)
        }
        if case .until(let deadline) = linger {
            return deadline <= now ? .ready(.elements([])) : .wait(deadline)
        }
        return .wait(nil)
    }

    /// When a take with `linger` stops waiting for more (nil: at once), given what is queued.
    private func lingerDeadline(_ linger: Linger) -> Instant? {
        switch linger {
        case .none: nil
        case .sinceOldest(let duration): oldestArrival.map { $0 + duration }
        case .until(let instant): instant
        }
    }

    /// Resumes the waiting consumer if it may take now, or arms its deadline once it has one.
    private mutating func consumerActions(now: Instant) -> Actions {
        guard let waiting = consumer else { return Actions() }
        switch evaluate(max: waiting.max, linger: waiting.linger, now: now) {
        case .ready(let taken):
            consumer = nil
            var actions = admitProducers(now: now)
            actions.consumer = (waiting.waiter, taken)
            return actions
        case .wait(let deadline):
            var actions = Actions()
            if let deadline, waiting.armed != deadline {
                consumer?.armed = deadline
                actions.deadline = (waiting.id, deadline)
            }
            return actions
        }
    }

    private func fits(_ count: Int) -> Bool {
        elements.isEmpty || elements.count + count <= capacity
    }

    private mutating func append(_ new: [Element], now: Instant) {
        guard !new.isEmpty else { return }
        if elements.isEmpty {
            oldestArrival = now
            elements = new  // no copy: the common hand-over into an empty queue
        } else {
            elements.append(contentsOf: new)
        }
    }

    /// The first `max` elements. What stays keeps its arrival time, so it is taken next without lingering again.
    private mutating func removeFirst(_ max: Int) -> [Element] {
        if elements.count <= max {
            defer {
                elements = []
                oldestArrival = nil
            }
            return elements
        }
        let taken = Array(elements.prefix(max))
        elements.removeFirst(max)
        return taken
    }

    /// Moves waiting producers' elements into the room a take freed, in arrival order.
    private mutating func admitProducers(now: Instant) -> Actions {
        var actions = Actions()
        while let first = producers.first, fits(first.elements.count) {
            producers.removeFirst()
            append(first.elements, now: now)
            actions.producers.append((first.waiter, true))
        }
        return actions
    }
}

/// How long a take from a ``RecordQueue`` waits for more elements once it could return some.
package enum RecordQueueLinger: Sendable, Equatable {
    /// Return what is queued at once.
    case none
    /// Until the oldest queued element has waited this long (a trickle of requests then
    /// shares one commit instead of paying one each).
    case sinceOldest(Duration)
    /// Until this instant; with nothing queued by then, the take returns no elements.
    case until(ContinuousClock.Instant)
}

/// What a take from a ``RecordQueueStateMachine`` returns.
package enum RecordQueueTake<Element: Sendable>: Sendable {
    /// Queued elements in order, at most the take's `max` (empty only at a ``RecordQueueLinger/until(_:)`` deadline).
    case elements([Element])
    /// ``RecordQueueStateMachine/wake(now:)`` was called while nothing was queued.
    case woken
    /// Finished and everything was taken, or stopped.
    case end
    /// Finished with this failure, after everything queued before it was taken.
    case failed(any Error)
    /// The consumer's task was cancelled while it waited.
    case cancelled
}
