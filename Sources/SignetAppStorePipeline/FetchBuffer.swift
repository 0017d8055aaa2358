import SignetCore
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
        /// The consumer waiting in ``next()``.
        var consumer: CheckedContinuation<Fetched?, any Error>?
        /// The consumer lingering in ``drain(atLeast:until:)``, woken once `drainWants` answers
        /// are queued (or at its deadline), not at every answer.
        var drainer: CheckedContinuation<[Fetched], Never>?
        var drainWants = 0
        /// The latest drain's number: its deadline timer may end it, a late one of an earlier
        /// drain must not. Only a new drain moves it while a drainer waits.
        var drainTicket: UInt64 = 0
        var producers: [CheckedContinuation<Void, Never>] = []
        /// No more answers will come (fetching ended); what is queued is still read.
        var finished = false
        /// Why fetching ended early; thrown to the consumer after the queued answers.
        var failure: (any Error)?
        /// The consumer stopped: queued answers are dropped, producers return at once.
        var stopped = false

        /// Everything queued, for the consumer; producers waiting for room may go on.
        mutating func takeAll() -> (items: [Fetched], producers: [CheckedContinuation<Void, Never>]) {
            defer { items = []; producers = [] }
            return (items, producers)
        }
    }

    private enum SendStep {
        case queued
        case full
        case stopped
        /// Queued, and the lingering consumer has what it waited for.
        case drained(CheckedContinuation<[Fetched], Never>, [Fetched], [CheckedContinuation<Void, Never>])
    }

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
                    consumer.resume(returning: item)
                    return .queued
                }
                state.items.append(item)
                if let drainer = state.drainer, state.items.count >= state.drainWants {
                    state.drainer = nil
                    let (items, producers) = state.takeAll()
                    return .drained(drainer, items, producers)
                }
                return .queued
            }
            switch step {
            case .queued: return true
            case .stopped: return false
            case .drained(let drainer, let items, let producers):
                producers.forEach { $0.resume() }
                drainer.resume(returning: items)
                return true
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

    /// The queued answers once there are at least `wanted` (at most the capacity), or at
    /// `deadline` whatever is queued by then (perhaps none); also at once when fetching ended
    /// or after ``stop()`` (then none). A fetching failure is not thrown here but by the next
    /// ``next()``, after the batch in hand was handed out.
    ///
    /// A batch that already has answers lingers here for more, to commit fewer and larger
    /// batches. The consumer sleeps through the answers that arrive meanwhile: a backfill
    /// lingers for most of its run, and waking at each answer (or polling) cost it several
    /// percent of its CPU.
    func drain(atLeast wanted: Int, until deadline: ContinuousClock.Instant) async -> [Fetched] {
        let threshold = min(max(1, wanted), capacity)
        let ticket = state.withLock { state -> UInt64 in
            state.drainTicket &+= 1
            return state.drainTicket
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline, tolerance: .milliseconds(5))
            self?.endDrain(ticket)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> ([Fetched], [CheckedContinuation<Void, Never>])? in
                    if state.stopped { return ([], []) }
                    let over = state.finished || state.failure != nil || state.drainTicket != ticket
                    if over || state.items.count >= threshold || ContinuousClock.now >= deadline { return state.takeAll() }
                    state.drainer = continuation
                    state.drainWants = threshold
                    return nil
                }
                if let (items, producers) = ready {
                    producers.forEach { $0.resume() }
                    continuation.resume(returning: items)
                }
            }
        } onCancel: {
            endDrain(ticket)
        }
    }

    /// Ends drain `ticket` (its deadline passed, or its task was cancelled) with what is queued.
    private func endDrain(_ ticket: UInt64) {
        let ended = state.withLock { state -> (CheckedContinuation<[Fetched], Never>, [Fetched], [CheckedContinuation<Void, Never>])? in
            guard state.drainTicket == ticket else { return nil }
            guard let drainer = state.drainer else {
                // Before its wait registered (or after it ended): moving the ticket on makes a
                // wait not yet registered end at once.
                state.drainTicket &+= 1
                return nil
            }
            state.drainer = nil
            let (items, producers) = state.takeAll()
            return (drainer, items, producers)
        }
        guard let (drainer, items, producers) = ended else { return }
        producers.forEach { $0.resume() }
        drainer.resume(returning: items)
    }

    /// Fetching ended: with `failure`, the consumer gets it after the queued answers.
    func finish(failure: (any Error)? = nil) {
        let (consumer, drainer, queued, producers) = state.withLock { state in
            state.finished = true
            if state.failure == nil { state.failure = failure }
            let drainer = state.drainer
            let queued = drainer == nil ? [] : state.items
            if drainer != nil { state.items = [] }
            defer { state.consumer = nil; state.drainer = nil; state.producers = [] }
            return (state.consumer, drainer, queued, state.producers)
        }
        producers.forEach { $0.resume() }
        drainer?.resume(returning: queued)
        guard let consumer else { return }
        if let failure { consumer.resume(throwing: failure) } else { consumer.resume(returning: nil) }
    }

    /// The consumer is done: drops what is queued and releases everyone waiting.
    func stop() {
        let (consumer, drainer, producers) = state.withLock { state in
            state.stopped = true
            state.items = []
            defer { state.consumer = nil; state.drainer = nil; state.producers = [] }
            return (state.consumer, state.drainer, state.producers)
        }
        producers.forEach { $0.resume() }
        drainer?.resume(returning: [])
        consumer?.resume(returning: nil)
    }
}

extension FetchBuffer {
    /// One batch of records for a source's `nextBatch`: `records` (left over from the last
    /// batch) first; while there are none, waits for an answer; then lingers until `linger`
    /// after the first answer for enough answers (about `recordsPerAnswer` records each) to
    /// fill `maxRecords`.
    ///
    /// `accept` turns an answer into its records and says whether that moved the source's
    /// checkpoint (an answer without records is done at once). The records come back empty
    /// only when fetching ended; those beyond `maxRecords` come back as `overflow`, for the
    /// next batch. Throws the fetching failure (after the answers queued before it).
    func batch(
        startingWith records: [Record], maxRecords: Int, linger: Duration, recordsPerAnswer: Int,
        accept: (Fetched) -> (records: [Record], advanced: Bool)
    ) async throws -> (records: [Record], overflow: [Record], advanced: Bool) {
        var records = records
        var advanced = false
        var lingerEnds = ContinuousClock.now
        while records.count < maxRecords {
            let answers: [Fetched]
            if records.isEmpty {
                guard let first = try await next() else { break }
                lingerEnds = .now + linger
                answers = [first]
            } else {
                let missing = maxRecords - records.count
                answers = await drain(atLeast: (missing + recordsPerAnswer - 1) / max(1, recordsPerAnswer), until: lingerEnds)
                guard !answers.isEmpty else { break }
            }
            for answer in answers {
                let (made, moved) = accept(answer)
                records += made
                advanced = advanced || moved
            }
        }
        return (Array(records.prefix(maxRecords)), Array(records.dropFirst(maxRecords)), advanced)
    }
}
