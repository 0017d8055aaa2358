import Foundation
public import SignetCore
public import SignetJWS

/// The stages that turn signed notifications into entitlement events, wired together.
///
/// `decode → verify → dedupe → transition` on one store, built as the loader builds them from a
/// pipeline file: `verify` skips the decoded document `transition` replaces, and `dedupe` leaves
/// the store lookup to `transition`'s commit, which checks every key. Wiring the four by hand
/// takes both decisions; this takes them for you:
///
/// ```swift
/// let store = try SQLiteStateStore(path: "signet.sqlite")
/// defer { try? store.close() }
/// let pipeline = try Pipeline(
///     source: LineSource(path: "notifications.ndjson"),
///     stages: StatePipeline.stages(verifier: verifier, store: store),
///     sinks: [NamedSink(name: "events", sink: StdoutSink())],
///     deadLetter: DeadLetterOutput(sink: FileSink(path: "dead-letter.ndjson")))
/// ```
///
/// Stages you add after these (a ``FanoutStage``, your own) see the events as the records'
/// outputs and as ``EntitlementEventsPart``.
public enum StatePipeline {
    /// Settings of the four stages.
    public struct Options: Sendable {
        /// `dedupe`'s key and retention; `keysCheckedByTransition` is set by ``StatePipeline``.
        public var dedupe = DedupeStage.Options()
        /// `transition`'s policy, retention and expiry sweep.
        public var transition = TransitionStage.Options()
        /// Threads decoding and verifying at once (default: every core).
        public var parallelism = ProcessInfo.processInfo.activeProcessorCount

        /// The defaults of every stage, every core.
        public init() {}
    }

    /// The four stages over a store the caller opened and closes.
    public static func stages(verifier: AppStoreVerifier, store: any StateStore, options: Options = Options()) -> [any Stage] {
        let (dedupe, transition) = agreeing(options)
        return front(verifier: verifier, options: options) + [
            DedupeStage(store: store, options: dedupe), TransitionStage(store: store, options: transition),
        ]
    }

    /// The four stages over a store resource the runner opens and closes (list it in the
    /// pipeline's `resources`).
    public static func stages(verifier: AppStoreVerifier, resource: StateStoreResource, options: Options = Options()) -> [any Stage] {
        let (dedupe, transition) = agreeing(options)
        return front(verifier: verifier, options: options) + [
            DedupeStage(resource: resource, options: dedupe), TransitionStage(resource: resource, options: transition),
        ]
    }

    private static func front(verifier: AppStoreVerifier, options: Options) -> [any Stage] {
        [DecodeStage(parallelism: options.parallelism), VerifyStage(verifier: verifier, parallelism: options.parallelism, emitsDocument: false)]
    }

    /// `dedupe` leaves its lookup to `transition`, and both compute the same key.
    private static func agreeing(_ options: Options) -> (DedupeStage.Options, TransitionStage.Options) {
        var dedupe = options.dedupe
        dedupe.keysCheckedByTransition = true
        var transition = options.transition
        transition.dedupeKey = dedupe.key
        return (dedupe, transition)
    }
}
