import Synchronization

/// Read-only connections beside a writer, for its point lookups (the entitlement API,
/// retention decisions, the support desk's reads).
///
/// The writer's connection is used under a lock that a batch holds through its commit and
/// fsync, so a lookup on it waits for the batch: at a hundred concurrent lookups that wait
/// was the p99. In WAL mode a reader sees the last commit without that lock. Bounded: when
/// every reader is busy the lookup takes the writer's connection, as it always did.
final class SQLiteReaderPool: Sendable {
    /// `@unchecked Sendable`: a reader is in the idle list (reached only under the pool's
    /// lock) or held by exactly one ``SQLiteReaderPool/withReader(_:)`` call, never both, so
    /// one thread at a time uses its connection.
    private final class Reader: @unchecked Sendable {
        let database: SQLiteDatabase
        init(_ database: SQLiteDatabase) { self.database = database }
    }

    /// What a lookup takes from the pool.
    private enum Take {
        case reader(Reader), open, none
    }

    private struct State {
        var idle: [Reader] = []
        var open = 0
        var closed = false
    }

    /// Readers at most: each keeps its own page cache (``pageCacheKiB``).
    static let capacity = 8
    /// A reader's page cache, smaller than the writer's 32 MiB: lookups touch a few pages
    /// each, and the OS page cache holds the rest for every connection at once.
    static let pageCacheKiB = 8_192

    private let path: String
    private let busyTimeoutMilliseconds: Int32
    private let state = Mutex(State())

    /// Readers of the database at `path`, opened on first use.
    init(path: String, busyTimeoutMilliseconds: Int32) {
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
    }

    /// Runs `body` on an idle reader; nil (body not run) when the pool is closed, full, or a
    /// reader cannot be opened: the caller uses the writer's connection then.
    func withReader<Result>(_ body: (SQLiteDatabase) throws -> Result) throws -> Result? {
        let take: Take = state.withLock { state in
            if state.closed { return .none }
            if let reader = state.idle.popLast() { return .reader(reader) }
            guard state.open < Self.capacity else { return .none }
            state.open += 1
            return .open
        }
        let reader: Reader
        switch take {
        case .none: return nil
        case .reader(let idle): reader = idle
        case .open:
            do {
                let database = try SQLiteDatabase(path: path, readOnly: true, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
                try database.execute("PRAGMA cache_size=-\(Self.pageCacheKiB)")
                reader = Reader(database)
            } catch {
                state.withLock { $0.open -= 1 }
                return nil
            }
        }
        defer {
            let closing: Reader? = state.withLock { state in
                if state.closed {
                    state.open -= 1
                    return reader
                }
                state.idle.append(reader)
                return nil
            }
            closing?.database.close()
        }
        return try body(reader.database)
    }

    /// Closes the idle readers now and those in use when they are returned.
    func close() {
        let idle = state.withLock { state in
            state.closed = true
            let idle = state.idle
            state.idle = []
            state.open -= idle.count
            return idle
        }
        for reader in idle { reader.database.close() }
    }
}
