import Foundation
import SignetAppStoreAPI
import SignetCore
import Synchronization

/// What a source that fetches from the App Store Server API does whatever it fetches
/// (`appstore_history`'s pages, `appstore_statuses`' answers): one copy of the machinery those
/// sources had each written out, so a fix to stopping, closing or checkpointing reaches both.
///
/// It owns the client's life (built at open, a failure naming the source; shut down at close,
/// or when opening fails), the ``RecordQueue`` between the fetching tasks and the runner, the
/// ``CheckpointWriter``, the fetcher task with its workers, the records left over from a
/// batch, and stopping and closing. It also holds the source's own state (its checkpoint, what
/// is pending), so a save snapshots the checkpoint under the same lock the source moves it
/// with. The source keeps what is its own: how it loads or plans its checkpoint, what a work
/// item is and how it is fetched, how an answer becomes records, and how commits advance the
/// checkpoint.
final class FetchingSourceCore<Fetched: Sendable, State: Sendable, Checkpoint: Sendable>: Sendable {
    private struct Lifecycle {
        var client: AppStoreServerAPIClient?
        var fetcher: Task<Void, Never>?
        /// Records of the last batch beyond its size, handed out first next time.
        var leftover: [Record] = []
        var stopped = false
    }

    private let name: String
    private let makeClient: @Sendable () throws -> AppStoreServerAPIClient
    private let checkpointPath: String
    private let checkpoint: @Sendable (State) -> Checkpoint?
    /// Checkpoint reads and writes (write + fsync + rename) block: off the cooperative pool, in order.
    private let checkpoints: CheckpointWriter<Checkpoint>
    private let buffer: RecordQueue<Fetched>
    private let batchLinger: Duration
    private let lifecycle = Mutex(Lifecycle())
    private let state: Mutex<State>

    /// - Parameters:
    ///   - name: the source's type (`appstore_history`), which a failure to build the client names.
    ///   - makeClient: builds the API client at ``open(load:)`` (so loading or linting a
    ///     pipeline needs no credentials); ``close()`` shuts it down.
    ///   - state: the source's state, reached with ``withState(_:)``.
    ///   - checkpoint: the checkpoint of a state, what ``save(throttled:)`` writes (nil: nothing yet).
    ///   - checkpointInterval: the least time between two throttled writes.
    ///   - label: the checkpoint writer's thread.
    ///   - write: writes a checkpoint to a path (atomically).
    ///   - bufferCapacity: answers fetched ahead of the runner.
    ///   - batchLinger: how long a batch waits for more answers once it has one.
    init(
        name: String, makeClient: @escaping @Sendable () throws -> AppStoreServerAPIClient, state: State,
        checkpoint: @escaping @Sendable (State) -> Checkpoint?, checkpointPath: String, checkpointInterval: Duration,
        label: String, write: @escaping @Sendable (Checkpoint, String) throws -> Void, bufferCapacity: Int, batchLinger: Duration
    ) {
        self.name = name
        self.makeClient = makeClient
        self.checkpointPath = checkpointPath
        self.checkpoint = checkpoint
        self.checkpoints = CheckpointWriter(path: checkpointPath, interval: checkpointInterval, label: label, write: write)
        self.buffer = RecordQueue<Fetched>(capacity: bufferCapacity)
        self.batchLinger = batchLinger
        self.state = Mutex(state)
    }

    /// Runs `body` on the source's state, under its lock.
    func withState<Result: Sendable, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        try state.withLock { state throws(Failure) in try body(&state) }
    }

    // MARK: - Opening

    /// Builds the client and runs `load` with it on the checkpoint writer's thread (file
    /// system work: the id list, the checkpoint). The client is shut down when `load` throws;
    /// otherwise it is the source's until ``close()``.
    func open<Loaded: Sendable>(
        load: @escaping @Sendable (AppStoreServerAPIClient) throws -> Loaded
    ) async throws -> (client: AppStoreServerAPIClient, loaded: Loaded) {
        let client: AppStoreServerAPIClient
        do {
            client = try makeClient()
        } catch {
            throw SourceError("\(name): \(error)")
        }
        let loaded: Loaded
        do {
            loaded = try await checkpoints.run { try load(client) }
        } catch {
            try? await client.shutdown()
            throw error
        }
        lifecycle.withLock { $0.client = client }
        return (client, loaded)
    }

    /// Runs blocking work (a store read) on the checkpoint writer's thread, off the cooperative
    /// pool, in order with the checkpoint's writes.
    func blocking<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await checkpoints.run(body)
    }

    /// Creates the folder of the checkpoint file. Blocking: for `load` of ``open(load:)``.
    func createCheckpointFolder() throws {
        let folder = (checkpointPath as NSString).deletingLastPathComponent
        if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
    }

    /// Writes the checkpoint (before the first answer, so a kill at any point leaves the run
    /// to resume), then starts fetching: `workers` tasks, each taking items from `claim` until
    /// it has none and fetching each with `fetch`, which sends its answers with ``send(_:)``
    /// and returns false once a send was refused (the source stopped). A thrown error ends
    /// fetching; the runner gets it after the answers queued before it.
    func startFetching<Item: Sendable>(
        workers: Int, claim: @escaping @Sendable () async throws -> Item?, fetch: @escaping @Sendable (Item) async throws -> Bool
    ) async throws {
        try await save()
        let fetcher = Task { [buffer] in
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<max(1, workers) {
                        group.addTask {
                            while let item = try await claim() {
                                guard try await fetch(item) else { return }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                buffer.finish()
            } catch {
                buffer.finish(failure: error)
            }
        }
        lifecycle.withLock { $0.fetcher = fetcher }
    }

    /// Queues an answer for the runner, waiting while the buffer is full. False once the
    /// source stopped (the answer is dropped: never committed, a resume fetches it again).
    func send(_ fetched: Fetched) async -> Bool {
        await buffer.send(fetched)
    }

    // MARK: - Running

    /// The source's `nextBatch`: the records left over from the last batch, then answers
    /// turned into records by `accept` (which says whether the checkpoint advanced: an answer
    /// without records is done at once), about `recordsPerAnswer` records each. Nil once
    /// fetching ended and everything was handed out, or after ``stop()``.
    func nextBatch(
        maxRecords: Int, recordsPerAnswer: Int, accept: (Fetched) -> (records: [Record], advanced: Bool)
    ) async throws -> [Record]? {
        guard let leftover: [Record] = lifecycle.withLock({ lifecycle in
            // After stop() nothing more is handed out; what was not committed is fetched again next run.
            if lifecycle.stopped { return nil }
            let taken = Array(lifecycle.leftover.prefix(maxRecords))
            lifecycle.leftover.removeFirst(taken.count)
            return taken
        }) else { return nil }
        let batch = try await buffer.batch(
            startingWith: leftover, maxRecords: maxRecords, linger: batchLinger, recordsPerAnswer: recordsPerAnswer,
            accept: accept)
        if !batch.overflow.isEmpty { lifecycle.withLock { $0.leftover += batch.overflow } }
        // An answer done without records after everything committed is recorded at once (no record will commit it).
        if batch.advanced { try await save(throttled: true) }
        return batch.records.isEmpty ? nil : batch.records
    }

    /// Writes the checkpoint as it is now; when `throttled`, only if the checkpoint interval
    /// passed since the last write (``close()`` writes the rest).
    func save(throttled: Bool = false) async throws {
        try await checkpoints.save(throttled: throttled) { state.withLock { checkpoint($0) } }
    }

    // MARK: - Stopping

    /// The source's `stop()`: nothing more is handed out, and fetching is cancelled.
    func stop() async {
        let fetcher = lifecycle.withLock { lifecycle in
            lifecycle.stopped = true
            return lifecycle.fetcher
        }
        buffer.stop()
        fetcher?.cancel()
    }

    /// The source's `close()`: ends fetching and waits for it, writes what the last commits
    /// recorded (held back by the checkpoint interval) and shuts the client down, even when
    /// that write failed; then throws its failure.
    func close() async throws {
        let (fetcher, client) = lifecycle.withLock { lifecycle in
            defer { lifecycle.fetcher = nil; lifecycle.client = nil }
            return (lifecycle.fetcher, lifecycle.client)
        }
        buffer.stop()
        fetcher?.cancel()
        await fetcher?.value
        var saveFailure: (any Error)?
        do { try await checkpoints.flush { state.withLock { checkpoint($0) } } } catch { saveFailure = error }
        try await client?.shutdown()
        if let saveFailure { throw saveFailure }
    }
}
