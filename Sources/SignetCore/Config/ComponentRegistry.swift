import Logging

/// What a factory gets besides its own settings.
public struct ComponentContext: Sendable {
    /// Where the component sits in the file (`stages[2]`), for messages.
    public var path: String
    /// The names of the pipeline's sinks, so a routing stage can check its targets.
    public var sinkNames: [String]
    public var logger: Logger

    public init(path: String, sinkNames: [String], logger: Logger) {
        self.path = path
        self.sinkNames = sinkNames
        self.logger = logger
    }
}

/// Maps the `type:` names used in pipeline files to factories.
///
/// Signet registers its own stages, sources and sinks (see `Signet.makeRegistry()`);
/// an embedding service adds its own the same way and then names them in YAML:
///
/// ```swift
/// var registry = Signet.makeRegistry()
/// registry.registerStage("tag_tenant", summary: "adds the tenant header") { config, _ in
///     let tenant = try config.string("tenant")
///     try config.finish()
///     return TagTenantStage(tenant: tenant)
/// }
/// ```
///
/// A factory reads its settings through ``ConfigObject`` (which reports unknown keys
/// with their line and column) and must not do I/O beyond reading small files such as
/// certificates: `signet lint` builds every component without running it. Opening
/// databases, sockets and output files belongs in `open()`.
public struct ComponentRegistry: Sendable {
    public typealias StageFactory = @Sendable (ConfigObject, ComponentContext) throws -> any Stage
    public typealias SourceFactory = @Sendable (ConfigObject, ComponentContext) throws -> any Source
    public typealias SinkFactory = @Sendable (ConfigObject, ComponentContext) throws -> any Sink

    /// A registered component type.
    public struct Entry<Factory: Sendable>: Sendable {
        public var summary: String
        public var factory: Factory
    }

    public private(set) var stages: [String: Entry<StageFactory>] = [:]
    public private(set) var sources: [String: Entry<SourceFactory>] = [:]
    public private(set) var sinks: [String: Entry<SinkFactory>] = [:]

    public init() {}

    /// Registers (or replaces) a stage type.
    public mutating func registerStage(_ type: String, summary: String, factory: @escaping StageFactory) {
        stages[type] = Entry(summary: summary, factory: factory)
    }

    /// Registers (or replaces) a source type.
    public mutating func registerSource(_ type: String, summary: String, factory: @escaping SourceFactory) {
        sources[type] = Entry(summary: summary, factory: factory)
    }

    /// Registers (or replaces) a sink type.
    public mutating func registerSink(_ type: String, summary: String, factory: @escaping SinkFactory) {
        sinks[type] = Entry(summary: summary, factory: factory)
    }
}
