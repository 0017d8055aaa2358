/// A ready-to-run pipeline: one source, stages in order, named sinks, a dead-letter sink.
///
/// Build one from YAML with ``PipelineLoader`` or directly in code:
///
/// ```swift
/// let pipeline = try Pipeline(
///     source: LineSource.standardInput(),
///     stages: [DecodeStage(), VerifyStage(verifier: verifier)],
///     sinks: [.init(name: "out", sink: StdoutSink())],
///     deadLetter: DeadLetterOutput(sink: FileSink(path: "dead-letter.ndjson")))
/// let summary = try await PipelineRunner(pipeline: pipeline).run()
/// ```
public struct Pipeline: Sendable {
    /// Where records come from.
    public var source: any Source
    /// What each batch passes through, in order.
    public var stages: [any Stage]
    /// Where the records' outputs go; every sink acknowledges a batch before it is committed.
    public var sinks: [NamedSink]
    /// Where rejected records go, with their reason code.
    public var deadLetter: DeadLetterOutput
    /// Batch size, progress, retry and shutdown timings.
    public var settings: PipelineSettings
    /// The named resources (`stores:`) the stages share; the runner opens them first
    /// and closes them last.
    public var resources: [NamedResource]
    /// Registered top-level sections the file wrote (e.g. `http:`), validated, for the
    /// code that serves them; keyed by section name.
    public var sections: [String: ParsedConfig]
    /// The reason codes its components may reject with (``ComponentSpec/rejects``), exported
    /// at 0 from the start; a code not listed still counts once it happens.
    public var reasonCodes: Set<ReasonCode>

    /// Throws when a stage relies on another the stages do not have (``Stage/checkPlacement(_:)``).
    public init(
        source: any Source, stages: [any Stage], sinks: [NamedSink], deadLetter: DeadLetterOutput,
        settings: PipelineSettings = PipelineSettings(), resources: [NamedResource] = [],
        sections: [String: ParsedConfig] = [:], reasonCodes: Set<ReasonCode> = []
    ) throws(PipelineWiringError) {
        self.reasonCodes = reasonCodes
        self.source = source
        self.stages = stages
        self.sinks = sinks
        self.deadLetter = deadLetter
        self.settings = settings
        self.resources = resources
        self.sections = sections
        try checkWiring()
    }

    /// Asks every stage whether the others give it what it relies on (``Stage/checkPlacement(_:)``).
    /// The initializer does; the runner does again before it opens anything, since ``stages``
    /// may have changed since.
    public func checkWiring() throws(PipelineWiringError) {
        for index in stages.indices {
            try stages[index].checkPlacement(StagePlacement(stages: stages, index: index))
        }
    }
}

/// A sink with the name routing rules use for it.
public struct NamedSink: Sendable {
    /// The name routing rules and metrics use.
    public var name: String
    /// The sink.
    public var sink: any Sink
    /// `sink` under `name`.
    public init(name: String, sink: any Sink) {
        self.name = name
        self.sink = sink
    }
}

/// How the runner batches, reports and retries.
public struct PipelineSettings: Sendable, Equatable {
    /// Records read and committed together. Larger batches amortise fsyncs and commits.
    public var batchSize: Int = 256
    /// How often a progress line goes to the log during long runs (nil: never).
    public var progressInterval: Duration? = .seconds(10)
    /// How long a failing sink is retried (with backoff) before the run stops uncommitted.
    public var sinkRetryTimeout: Duration = .seconds(300)
    /// How long a graceful stop may take to drain in-flight batches.
    public var shutdownTimeout: Duration = .seconds(20)

    /// The defaults (a pipeline file's `settings:`).
    public init() {}
}
