import Dispatch
public import Logging
public import SignetCore
import Synchronization

/// Reads records from Kafka topics as a consumer-group member, committing offsets only
/// for records the pipeline finished (see `docs/kafka.md`).
///
/// - Offsets: `enable.auto.commit` and `enable.auto.offset.store` are off. ``commit(_:)``
///   commits, per partition, the contiguous high-water mark of finished records, so a
///   later success never commits past an earlier record still in flight.
/// - Rebalances (eager or cooperative): before partitions go, what is finished is
///   committed synchronously; records polled for them but not yet handed out are
///   dropped; acknowledgements of records handed out before the revoke are ignored
///   (the new owner reads them again). Partitions *lost* (session timeout, fenced member)
///   cannot be committed: their finished records are logged at error level, counted
///   (`signet_kafka_records_to_redo_total`) and reported by ``close()`` as left to redo.
/// - Bounded redo: while the coordinator refuses a partition's commits, the partition stops
///   fetching once ``Options/maxUncommittedPerPartition`` of its records are finished but
///   uncommitted, and resumes when a commit passes or the partition moves.
/// - Backpressure: librdkafka fetches into its bounded queue
///   (`queued.max.messages.kbytes`); this source takes from it only when the runner asks.
/// - Blocking librdkafka calls run on a dedicated serial queue, never on Swift's
///   cooperative pool.
/// - A stalled pipeline does not cost the membership: when the runner has not asked for
///   records for ``keepAliveAfter`` (its handoff is full behind a slow sink), a timer on that
///   queue pauses the partitions and polls for the member, so `max.poll.interval.ms` never
///   expires, rebalances complete and failed commits go out again; the next ask resumes.
public final class KafkaSource: Source {
    /// How to connect and what to read.
    public struct Options: Sendable {
        /// librdkafka properties, applied in order after Signet's defaults
        /// (``KafkaSource/defaultProperties``); must include `bootstrap.servers` and `group.id`.
        public var properties: [KafkaProperty]
        /// Topics to subscribe to (a name starting with `^` is a regex, as in librdkafka).
        public var topics: [String]
        /// How long one `nextBatch` waits for the first message before returning empty.
        public var pollTimeout: Duration
        /// How long ``KafkaSource/close()`` keeps committing finished offsets through a
        /// rebalance in progress or a coordinator move before it gives up (and throws
        /// `UncommittedPositions`). Keep it below the pipeline's `shutdown_timeout`.
        public var commitTimeout: Duration
        /// While commits of a partition are refused, how many of its records may be finished
        /// but uncommitted before the source stops fetching it (the most work a lost
        /// partition leaves to redo, plus the records in flight); fetching resumes when a
        /// commit is acknowledged or the partition moves.
        public var maxUncommittedPerPartition: Int

        /// The default of ``maxUncommittedPerPartition``: a few seconds of one busy partition,
        /// so an ordinary rebalance (commits refused for about as long) never pauses anything.
        public static let defaultMaxUncommittedPerPartition = 1000

        public init(
            properties: [KafkaProperty], topics: [String], pollTimeout: Duration = .milliseconds(100),
            commitTimeout: Duration = .seconds(10), maxUncommittedPerPartition: Int = Options.defaultMaxUncommittedPerPartition
        ) {
            self.properties = properties
            self.topics = topics
            self.pollTimeout = pollTimeout
            self.commitTimeout = commitTimeout
            self.maxUncommittedPerPartition = maxUncommittedPerPartition
        }
    }

    /// Applied before the user's properties. The two commit switches are enforced
    /// (the registry rejects overriding them); `auto.offset.reset=earliest` makes a new
    /// group start from the oldest retained notification rather than skip the backlog.
    public static let defaultProperties: [KafkaProperty] = [
        KafkaProperty("enable.auto.commit", "false"),
        KafkaProperty("enable.auto.offset.store", "false"),
        KafkaProperty("auto.offset.reset", "earliest"),
    ]

    public let options: Options
    private let logger: Logger
    /// One serial queue per source: poll, the close's commits and close run here, one at a time.
    private let queue: BlockingExecutor
    private let client = Mutex<KafkaConsumerClient?>(nil)
    private let stopped = Atomic<Bool>(false)
    /// When the runner's last poll ended (set on the queue).
    private let lastAsked = Mutex(ContinuousClock.now)
    private let keepAliveTimer = Mutex<DispatchTimer?>(nil)

    /// How long the runner may go without asking for records before the source polls for it
    /// (pausing its partitions): well inside `max.poll.interval.ms` (default 5 minutes) and
    /// the group's rebalance wait, long enough that a normal batch never triggers it.
    public static let keepAliveAfter = Duration.seconds(1)

    public init(options: Options, logger: Logger = Logger(label: "signet.kafka")) {
        self.options = options
        self.logger = logger
        self.queue = BlockingExecutor(label: "signet.kafka.source")
    }

    /// Creates the consumer and subscribes (joining the group happens on the first polls).
    public func open() async throws {
        let properties = Self.defaultProperties + options.properties
        let topics = options.topics
        let limit = max(1, options.maxUncommittedPerPartition)
        let logger = logger
        let consumer = try await queue.run {
            try KafkaConsumerClient(properties: properties, topics: topics, maxUncommittedPerPartition: limit, logger: logger)
        }
        client.withLock { $0 = consumer }
        lastAsked.withLock { $0 = .now }
        let timer = queue.schedule(every: Self.keepAliveAfter / 2) { [weak self] in self?.keepAliveTick() }
        keepAliveTimer.withLock { $0 = timer }
    }

    /// On the queue: serves the group for a runner that has not asked for a while.
    private func keepAliveTick() {
        guard !stopped.load(ordering: .acquiring), let consumer = client.withLock({ $0 }) else { return }
        let idle = ContinuousClock.now - lastAsked.withLock { $0 }
        guard idle >= Self.keepAliveAfter else { return }
        if !consumer.isPausedByKeepAlive {
            logger.info("kafka: the pipeline has not asked for records for \(idle); pausing the partitions and keeping the group membership until it does")
        }
        consumer.keepAlive()
    }

    /// Up to `maxRecords` records; an empty array when nothing arrived within the poll
    /// timeout; nil once ``stop()`` was called.
    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        guard !stopped.load(ordering: .acquiring) else { return nil }
        let consumer = try openClient()
        let timeout = options.pollTimeout
        let limit = max(1, maxRecords)
        let records = try await queue.run { [self] in
            defer { lastAsked.withLock { $0 = .now } }
            if consumer.isPausedByKeepAlive {
                logger.info("kafka: the pipeline asks for records again; resuming the partitions")
            }
            return try consumer.poll(maxRecords: limit, timeout: timeout)
        }
        // Records polled after stop() are not committed, so the next run reads them.
        guard !stopped.load(ordering: .acquiring) else { return nil }
        return records
    }

    /// Marks the positions finished and commits, asynchronously, each partition's new
    /// contiguous high-water mark. Positions of revoked partitions are ignored.
    /// A commit that fails with a retriable error (a rebalance in progress, ...) is sent
    /// again with backoff by the following polls, even when no more records arrive.
    public func commit(_ positions: [SourcePosition]) async throws {
        try openClient().finish(positions)
    }

    public func stop() async {
        stopped.store(true, ordering: .releasing)
    }

    /// Commits synchronously what is finished (retrying through a rebalance up to
    /// ``Options/commitTimeout``), leaves the group and frees the consumer. Throws
    /// `UncommittedPositions` naming the partitions and offsets that stayed uncommitted,
    /// including those of partitions lost during the close with finished records uncommitted.
    public func close() async throws {
        keepAliveTimer.withLock { $0.take() }?.cancel()
        guard let consumer = client.withLock({ $0.take() }) else { return }
        let timeout = options.commitTimeout
        try await queue.run { try consumer.close(commitTimeout: timeout) }
    }

    /// The partitions this member owns now.
    package var assignment: Set<TopicPartition> {
        client.withLock { $0?.assignment ?? [] }
    }

    /// The broker's committed offsets for `partitions` (what a restarted member resumes
    /// from); partitions without a commit are absent or negative (`OFFSET_INVALID`).
    package func committedOffsets(_ partitions: [TopicPartition], timeout: Duration = .seconds(5)) async throws -> [TopicPartition: Int64] {
        let consumer = try openClient()
        return try await queue.run { try consumer.committedOffsets(partitions, timeout: timeout) }
    }

    /// Rebalance events (assign and revoke) so far, for tests.
    var rebalances: Int { client.withLock { $0?.callbacks.rebalances.load(ordering: .relaxed) ?? 0 } }

    /// Acknowledgements ignored because their partition was revoked after hand-out.
    var ignoredLateCommits: Int { client.withLock { $0?.callbacks.tracker.withLock { $0.ignoredLateCommits } ?? 0 } }

    /// Finished commit points not yet sent to the broker (empty after each commit, unless one failed).
    var pendingCommits: [TopicPartition: Int64] { client.withLock { $0?.uncommitted ?? [:] } }

    /// Finished records whose partitions were lost before a commit covered them, so far.
    var recordsToRedo: Int { client.withLock { $0?.callbacks.recordsToRedo.load(ordering: .relaxed) ?? 0 } }

    /// Partitions paused because their refused commits reached ``Options/maxUncommittedPerPartition``.
    var heldPartitions: Set<TopicPartition> { client.withLock { $0?.held ?? [] } }

    private func openClient() throws -> KafkaConsumerClient {
        guard let consumer = client.withLock({ $0 }) else { throw KafkaError("the Kafka source is not open") }
        return consumer
    }
}
