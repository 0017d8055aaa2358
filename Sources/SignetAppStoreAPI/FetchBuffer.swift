import Synchronization

/// What was fetched from Apple but not yet read by the runner: a bounded queue between the
/// tasks that call the API (history answers, subscription statuses) and the source or stage
/// that turns their answers into records.
///
/// Bounded so fetching never runs far ahead of a slow pipeline (memory stays a few answers per
/// fetcher); one consumer, any number of producers.
final class FetchBuffer<Fetched: Sendable>: Sendable {
    private struct State {
        var items: [Fetched] = []
        var consumer: CheckedContinuation<Fetched?, any Error>?
        /// Set while the consumer lingers (``poll(until:)``): which wait the timer may end, and
        /// that a failure ends it with nil (the failure is thrown by the next ``next()``).
        var lingering: UInt64?
        var lingerCount: UInt64 = 0
        var producers: [CheckedContinuation<Void, Never>] = []
        /// No more answers will come (fetching ended); what is queued is still read.
        var finished = false
        /// Why fetching ended early; thrown to the consumer after the queued answers.
        var failure: (any Error)?
        /// The consumer stopped: queued answers are dropped, producers return at once.
        var stopped = false
    }

    private enum SendStep { case queued, full, stopped }
    private enum NextStep { case item(Fetched), end, failure(any Error), wait }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Queues an answer, waiting while the queue is full. Returns false once the consumer
    /// stopped (the answer is dropped: it was never committed, so a resume fetches it again).
    func send(_ item: Fetched) async -> Bool {
        while true {
            let step: SendStep = state.withLock { state in
                if state.stopped || state.finished { return .stopped }
                guard state.items.count < capacity || state.consumer != nil else { return .full }
                if let consumer = state.consumer {
                    state.consumer = nil
                    state.lingering = nil
                    consumer.resume(returning: item)
                } else {
                    state.items.append(item)
                }
                return .queued
            }
            switch step {
            case .queued: return true
            case .stopped: return false
            case .full:
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.stopped || state.finished || state.items.count < capacity { return true }
                        state.producers.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// The next answer, waiting for one; nil once fetching finished and everything was read,
    /// or after ``stop()``. Throws the fetching failure after the answers queued before it.
    func next() async throws -> Fetched? {
        try await withCheckedThrowingContinuation { continuation in
            let step: NextStep = state.withLock { state in
                if state.stopped { return .end }
                if !state.items.isEmpty {
                    let item = state.items.removeFirst()
                    if !state.producers.isEmpty { state.producers.removeFirst().resume() }
                    return .item(item)
                }
                if let failure = state.failure { return .failure(failure) }
                if state.finished { return .end }
                state.consumer = continuation
                return .wait
            }
            switch step {
            case .item(let item): continuation.resume(returning: item)
            case .end: continuation.resume(returning: nil)
            case .failure(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }
    }

    /// A queued answer if there is one, without waiting.
    func poll() -> Fetched? {
        state.withLock { state in
            guard !state.stopped, !state.items.isEmpty else { return nil }
            if !state.producers.isEmpty { state.producers.removeFirst().resume() }
            return state.items.removeFirst()
        }
    }

    /// A queued answer, waiting for one until `deadline` (a batch that already has answers
    /// lingers for more, to commit fewer and larger batches); nil when none came by then, once
    /// fetching ended, or after ``stop()``. A fetching failure is not thrown here but by the
    /// next ``next()``, after the batch in hand was handed out.
    ///
    /// The wait is one continuation and one timer, not a sleep loop: a backfill lingers for
    /// most of its run, and waking every few milliseconds cost it several percent of its CPU.
    func poll(until deadline: ContinuousClock.Instant) async throws -> Fetched? {
        if let answer = poll() { return answer }
        guard ContinuousClock.now < deadline else { return nil }
        let ticket = state.withLock { state -> UInt64 in
            state.lingerCount &+= 1
            return state.lingerCount
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline, tolerance: .milliseconds(5))
            self?.endLinger(ticket)
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let step: NextStep = state.withLock { state in
                    if state.stopped { return .end }
                    if !state.items.isEmpty {
                        let item = state.items.removeFirst()
                        if !state.producers.isEmpty { state.producers.removeFirst().resume() }
                        return .item(item)
                    }
                    if state.finished || state.failure != nil || state.lingerCount != ticket { return .end }
                    state.consumer = continuation
                    state.lingering = ticket
                    return .wait
                }
                switch step {
                case .item(let item): continuation.resume(returning: item)
                case .end, .failure: continuation.resume(returning: nil)
                case .wait: break
                }
            }
        } onCancel: {
            endLinger(ticket)
        }
    }

    /// Ends the linger `ticket` (its deadline passed, or its task was cancelled) with nil, if the
    /// consumer still waits in it.
    private func endLinger(_ ticket: UInt64) {
        let consumer = state.withLock { state -> CheckedContinuation<Fetched?, any Error>? in
            // A timer that fires before its wait registered leaves a mark the wait sees.
            guard state.lingering == ticket else {
                if state.lingerCount == ticket, state.consumer == nil { state.lingerCount &+= 1 }
                return nil
            }
            state.lingering = nil
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume(returning: nil)
    }

    /// Fetching ended: with `failure`, the consumer gets it after the queued answers.
    func finish(failure: (any Error)? = nil) {
        let (consumer, lingering, producers) = state.withLock { state in
            state.finished = true
            if state.failure == nil { state.failure = failure }
            defer { state.consumer = nil; state.lingering = nil; state.producers = [] }
            return (state.consumer, state.lingering != nil, state.producers)
        }
        producers.forEach { $0.resume() }
        guard let consumer else { return }
        if let failure, !lingering { consumer.resume(throwing: failure) } else { consumer.resume(returning: nil) }
    }

    /// The consumer is done: drops what is queued and releases everyone waiting.
    func stop() {
        let (consumer, producers) = state.withLock { state in
            state.stopped = true
            state.items = []
            defer { state.consumer = nil; state.lingering = nil; state.producers = [] }
            return (state.consumer, state.producers)
        }
        producers.forEach { $0.resume() }
        consumer?.resume(returning: nil)
    }
}
