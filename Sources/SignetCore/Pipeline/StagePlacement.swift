/// Where a stage sits in a pipeline: the whole stage list and its own index, handed to
/// ``Stage/checkPlacement(_:)`` when the pipeline is built.
///
/// A stage that relies on another one (`dedupe` leaving its key lookup to `transition`'s
/// commit, `verify` skipping the document a later stage would replace) checks here that the
/// other one is really there, so a pipeline wired wrong in code fails where it is built
/// instead of passing records it should have stopped.
public struct StagePlacement: Sendable {
    /// Every stage of the pipeline, in order.
    public let stages: [any Stage]
    /// The index of the stage being checked in ``stages``.
    public let index: Int

    /// The place of `stages[index]` among `stages`.
    public init(stages: [any Stage], index: Int) {
        self.stages = stages
        self.index = index
    }

    /// The stages after this one.
    public var laterStages: ArraySlice<any Stage> { stages[(index + 1)...] }

    /// Every stage but this one, before or after it.
    public var otherStages: [any Stage] {
        stages.indices.filter { $0 != index }.map { stages[$0] }
    }

    /// Whether a stage after this one declares `trait`.
    public func laterStage(declares trait: StageTrait) -> Bool {
        laterStages.contains { $0.traits.contains(trait) }
    }
}

/// A pipeline whose stages do not fit together: a stage relies on another that is missing.
///
/// Thrown by ``Pipeline/init(source:stages:sinks:deadLetter:settings:resources:sections:reasonCodes:)``
/// and ``Pipeline/checkWiring()``, before anything is opened or read.
public struct PipelineWiringError: Error, CustomStringConvertible, Sendable {
    /// The type name of the stage that is placed wrong (``Stage/name``).
    public var stage: String
    /// Its index in the pipeline's stages.
    public var index: Int
    /// What is wrong and how to fix it.
    public var message: String

    /// An error about the stage `stage` at `index`, saying what is wrong in `message`.
    public init(stage: String, index: Int, message: String) {
        self.stage = stage
        self.index = index
        self.message = message
    }

    public var description: String { "stage \(index) (\(stage)): \(message)" }
}
