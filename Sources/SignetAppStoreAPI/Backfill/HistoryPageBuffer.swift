import Synchronization

/// The pages fetched but not yet read by the runner: a bounded queue between the tasks
/// that page through sub-windows and ``AppStoreHistorySource/nextBatch(maxRecords:)``.
///
/// Bounded so fetching never runs far ahead of a slow pipeline (memory stays a few pages per
/// fetcher); one consumer, any number of producers.
final class HistoryPageBuffer: Sendable {
    /// One page and the sub-window it belongs to.
    struct Fetched: Sendable {
        var subWindow: Int
        var page: NotificationHistoryPage
    }

    private struct State {
        var items: [Fetched] = []
        var consumer: CheckedContinuation<Fetched?, any Error>?
        var producers: [CheckedContinuation<Void, Never>] = []
        /// No more pages will come (fetching ended); what is queued is still read.
        var finished = false
        /// Why fetching ended early; thrown to the consumer after the queued pages.
        var failure: (any Error)?
        /// The consumer stopped: queued pages are dropped, producers return at once.
        var stopped = false
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Queues a page, waiting while the queue is full. Returns false once the consumer
    /// stopped (the page is dropped: it was never committed, so a resume fetches it again).
    func send(_ item: Fetched) async -> Bool {
        while true {
            enum Step { case queued, full, stopped }
            let step: Step = state.withLock { state in
                if state.stopped || state.finished { return .stopped }
                guard state.items.count < capacity || state.consumer != nil else { return .full }
                if let consumer = state.consumer {
                    state.consumer = nil
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

    /// The next page, waiting for one; nil once fetching finished and everything was read,
    /// or after ``stop()``. Throws the fetching failure after the pages queued before it.
    func next() async throws -> Fetched? {
        try await withCheckedThrowingContinuation { continuation in
            enum Step { case item(Fetched), end, failure(any Error), wait }
            let step: Step = state.withLock { state in
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

    /// A queued page if there is one, without waiting.
    func poll() -> Fetched? {
        state.withLock { state in
            guard !state.stopped, !state.items.isEmpty else { return nil }
            if !state.producers.isEmpty { state.producers.removeFirst().resume() }
            return state.items.removeFirst()
        }
    }

    /// Fetching ended: with `failure`, the consumer gets it after the queued pages.
    func finish(failure: (any Error)? = nil) {
        let (consumer, producers) = state.withLock { state in
            state.finished = true
            if state.failure == nil { state.failure = failure }
            defer { state.consumer = nil; state.producers = [] }
            return (state.consumer, state.producers)
        }
        producers.forEach { $0.resume() }
        guard let consumer else { return }
        if let failure { consumer.resume(throwing: failure) } else { consumer.resume(returning: nil) }
    }

    /// The consumer is done: drops what is queued and releases everyone waiting.
    func stop() {
        let (consumer, producers) = state.withLock { state in
            state.stopped = true
            state.items = []
            defer { state.consumer = nil; state.producers = [] }
            return (state.consumer, state.producers)
        }
        producers.forEach { $0.resume() }
        consumer?.resume(returning: nil)
    }
}
