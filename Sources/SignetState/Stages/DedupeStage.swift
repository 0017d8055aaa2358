public import SignetCore
import SignetJWS

/// `dedupe`: drops Apple's retries of a notification.
///
/// With `transition` after it (sharing the store), it drops repeats within one batch
/// (`drop(reason: "duplicate")`) and leaves the key (`DedupeKeyPart`) and the derived
/// input (`TransitionInputPart`) on the record for `transition`, whose check in its own
/// commit is the authoritative one (stages run concurrently on different batches). With
/// ``Options/keysCheckedByTransition`` it leaves the store lookup to that check; without,
/// it looks keys up first and drops those already committed. Used without `transition`, it
/// records keys in ``acknowledge(_:)``, after the sinks acknowledged, never before, so a
/// crash can only cause a redelivery, never a loss.
public final class DedupeStage: Stage {
    public let name = "dedupe"

    /// Settings of the stage besides the store.
    public struct Options: Sendable {
        /// What identifies a retry: Apple's `notificationUUID` (the default) or the notification's content.
        public var key = DedupeKeyKind.notificationUUID
        /// How long keys are kept: longer than Apple retries a notification
        /// (`NotificationRetrySchedule/total`, about 6.5 days).
        public var retention: Duration = .seconds(30 * 86_400)
        /// How often old keys are pruned.
        public var pruneInterval: Duration = .seconds(60)
        /// Whether a ``TransitionStage`` on the same store checks every key in its own commit,
        /// so this stage drops only repeats within a batch and leaves the store lookup to that
        /// commit (which must check anyway: stages run concurrently on different batches).
        /// The loader sets it when the pipeline has a `transition` naming the same store, and
        /// ``StatePipeline/stages(verifier:store:options:)`` does; a pipeline built otherwise with
        /// it set and no such stage is refused where it is built (committed retries would pass).
        public var keysCheckedByTransition = false

        /// The defaults: notificationUUID keys kept 30 days, pruned every minute.
        public init() {}
    }

    /// The stage's settings.
    public let options: Options
    private let handle: StoreHandle

    /// A stage over a store the caller owns (embedding, tests).
    public init(store: any StateStore, options: Options = Options()) {
        self.handle = StoreHandle(.instance(store.roles.store))
        self.options = options
    }

    /// A stage over a store resource of the pipeline (`stores:`), which the runner opens.
    public init(resource: StateStoreResource, options: Options = Options()) {
        self.handle = StoreHandle(.resource(resource))
        self.options = options
    }

    /// Whether `other` works on the same store as this stage (the same instance or resource).
    func sharesStore(with other: StoreHandle) -> Bool { handle.isSameStore(as: other) }

    /// Leaving the key lookup to a `transition` commit needs that commit: without a
    /// ``TransitionStage`` on the same store, a retry of a committed notification would pass.
    public func checkPlacement(_ placement: StagePlacement) throws(PipelineWiringError) {
        guard options.keysCheckedByTransition else { return }
        let checked = placement.otherStages.contains { ($0 as? TransitionStage).map { sharesStore(with: $0.handle) } ?? false }
        guard !checked else { return }
        throw PipelineWiringError(
            stage: name, index: placement.index,
            message: "keysCheckedByTransition is set, but no transition stage on the same store checks the keys, "
                + "so retries of committed notifications would pass; add TransitionStage on this store "
                + "(StatePipeline.stages(verifier:store:) builds the four stages together), or leave keysCheckedByTransition false")
    }

    public func process(_ batch: inout RecordBatch) async throws {
        let store = try handle.store()
        var indices: [Int] = []
        var keys: [String] = []
        var seen = Set<String>()
        for index in batch.records.indices where batch.records[index].isActive {
            // Records without a verified payload are left for later stages to judge.
            guard let payload = batch.records[index][VerifiedPayloadPart.self] else { continue }
            let input = TransitionInput(payload)
            let key = options.key.key(for: input)
            batch.records[index][TransitionInputPart.self] = input
            batch.records[index][DedupeKeyPart.self] = key
            guard seen.insert(key).inserted else {
                batch.records[index].drop(reason: "duplicate")
                continue
            }
            indices.append(index)
            keys.append(key)
        }
        // With `transition` on the same store, its commit checks every key anyway (and must:
        // stages run concurrently on different batches); looking them up here as well would
        // only pay for each lookup twice. Its duplicates are dropped there, same reason.
        guard !keys.isEmpty, !options.keysCheckedByTransition else { return }
        let known = try store.containedKeys(keys)
        guard !known.isEmpty else { return }
        for (index, key) in zip(indices, keys) where known.contains(key) {
            batch.records[index].drop(reason: "duplicate")
        }
    }

    public func acknowledge(_ batch: RecordBatch) async throws {
        guard !batch.isRedelivery else { return }
        let store = try handle.store()
        var keys: [String] = []
        for record in batch.records where record.isActive && record[StateAppliedPart.self] != true {
            if let key = record[DedupeKeyPart.self] { keys.append(key) }
        }
        let now = WallClock.milliseconds()
        try store.recordKeys(keys, seenAt: now)
        try handle.pruneIfDue(retention: options.retention, interval: options.pruneInterval, now: now)
    }
}
