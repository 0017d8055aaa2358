public import Logging

/// What a factory gets besides its own settings.
public struct ComponentContext: Sendable {
    /// Where the component sits in the file (`stages[2]`), for messages.
    public var path: String
    /// The component's own name where the file gives it one: a sink's key under `sinks:`
    /// (its metrics' `sink` label), a store's under `stores:`, `dead_letter`; nil for a
    /// stage or the source.
    public var name: String?
    /// The names of the pipeline's sinks, so a routing stage can check its targets.
    public var sinkNames: [String]
    /// Where the component logs.
    public var logger: Logger
    /// The pipeline's resources (`stores:`) built so far, by name.
    public var resources: [String: any PipelineResource]
    /// Where the component's mapping starts.
    public var location: ConfigLocation?
    /// Keys of the mapping that belong to the loader (`type`, and `format` for a dead-letter sink).
    public var reservedKeys: Set<String>
    /// The environment the loader was given (``PipelineLoader/environment``): the one place a
    /// factory reads a variable from (a default such as `SIGNET_API_TOKEN`, a key file's
    /// contents), so a pipeline loaded with another environment (tests, lint) never sees the
    /// process's.
    public var environment: [String: String]
    /// Every stage of `stages:` in file order, with what it declares; empty for a component
    /// that is not a stage (and for a context made by hand).
    package var stages: [StageFacts] = []
    /// This stage's index in ``stages``; nil for a component that is not a stage.
    package var stageIndex: Int?

    /// What the loader knows of one stage of the pipeline before building any.
    package struct StageFacts: Sendable {
        /// Its type's ``ComponentSpec/traits``.
        package var traits: Set<StageTrait>
        /// The stores its `.storeName` fields name (defaults included).
        package var stores: Set<String>
    }

    /// A context for building one component (the loader makes them; tests and embedders may too).
    public init(
        path: String, name: String? = nil, sinkNames: [String], logger: Logger,
        resources: [String: any PipelineResource] = [:], location: ConfigLocation? = nil,
        reservedKeys: Set<String> = ["type"], environment: [String: String] = [:]
    ) {
        self.path = path
        self.name = name
        self.sinkNames = sinkNames
        self.logger = logger
        self.resources = resources
        self.location = location
        self.reservedKeys = reservedKeys
        self.environment = environment
    }

    /// Whether a stage after this one in `stages:` declares `trait`; false for a component
    /// that is not a stage. `verify` builds no decoded document when a later stage
    /// ``StageTrait/replacesOutputs``.
    public func laterStage(declares trait: StageTrait) -> Bool {
        guard let stageIndex else { return false }
        return stages[(stageIndex + 1)...].contains { $0.traits.contains(trait) }
    }

    /// Whether another stage of the pipeline, before or after this one, names the store
    /// `store` and declares `trait`: `dedupe` leaves its key lookup to a `transition` that
    /// checks every key in its own commit on the same store.
    public func otherStage(declares trait: StageTrait, usingStore store: String) -> Bool {
        stages.indices.contains { $0 != stageIndex && stages[$0].traits.contains(trait) && stages[$0].stores.contains(store) }
    }

    /// The resource named `name`, which must be of type `R`.
    ///
    /// The loader has already checked that names written in `.storeName` fields exist,
    /// so this fails only when the resource is of another kind than the component needs.
    public func resource<R>(named name: String, as type: R.Type = R.self) throws(ConfigError) -> R {
        guard let resource = resources[name] else {
            throw ConfigError("'\(path)' names the store '\(name)', which the pipeline does not declare", at: location)
        }
        guard let typed = resource as? R else {
            throw ConfigError("'\(path)' needs a store of another kind than '\(name)' (\(Swift.type(of: resource)))", at: location)
        }
        return typed
    }
}
