import Logging

/// Maps the `type:` names used in pipeline files to specs and factories.
///
/// Signet registers its own stages, sources, sinks and stores (see
/// `Signet.makeRegistry()`); an embedding service adds its own the same way and then
/// names them in YAML:
///
/// ```swift
/// var registry = Signet.makeRegistry()
/// registry.registerStage(
///     ComponentSpec(name: "tag_tenant", summary: "adds the tenant header", fields: [
///         ConfigField("tenant", .string, .required, "the tenant id written into every event"),
///     ])
/// ) { config, _ in
///     TagTenantStage(tenant: try config.string("tenant"))
/// }
/// ```
///
/// The loader validates each component's mapping against its ``ComponentSpec``
/// before calling the factory, which then reads typed values from a ``ParsedConfig``.
/// A factory must not do I/O beyond reading small files such as certificates: `signet
/// lint` builds every component without running it. Opening databases, sockets and
/// output files belongs in `open()`.
public struct ComponentRegistry: Sendable {
    /// Builds a stage from its validated mapping and what the rest of the pipeline declares.
    public typealias StageFactory = @Sendable (ParsedConfig, ComponentContext) throws -> any Stage
    /// Builds a source from its validated mapping.
    public typealias SourceFactory = @Sendable (ParsedConfig, ComponentContext) throws -> any Source
    /// Builds a sink from its validated mapping.
    public typealias SinkFactory = @Sendable (ParsedConfig, ComponentContext) throws -> any Sink
    /// Builds a store (`stores:`) from its validated mapping.
    public typealias StoreFactory = @Sendable (ParsedConfig, ComponentContext) throws -> any PipelineResource

    /// A registered component type.
    public struct Entry<Factory: Sendable>: Sendable {
        /// The type's options and documentation.
        public var spec: ComponentSpec
        /// What builds it.
        public var factory: Factory
        /// The spec's one-line summary.
        public var summary: String { spec.summary }
    }

    /// The stage types, by name.
    public private(set) var stages: [String: Entry<StageFactory>] = [:]
    /// The source types, by name.
    public private(set) var sources: [String: Entry<SourceFactory>] = [:]
    /// The sink types, by name.
    public private(set) var sinks: [String: Entry<SinkFactory>] = [:]
    /// The store types, by name.
    public private(set) var stores: [String: Entry<StoreFactory>] = [:]
    /// Top-level sections without `type:` (`settings:`, and any an embedding service adds).
    public private(set) var sections: [String: ComponentSpec] = [:]
    /// Checks of a whole pipeline once built, for what no single component can judge (a
    /// section served by the source, needing a stage): the loader runs them, so `signet lint`
    /// reports what `signet run` would refuse. Each throws a ``ConfigError`` at what is wrong.
    package private(set) var pipelineChecks: [@Sendable (Pipeline) throws -> Void] = []

    /// The store type behind the implicit store named `default` (set by whoever
    /// registers the state stores); nil means a pipeline must declare every store.
    public var defaultStoreType: String?

    /// The top-level keys the loader handles itself (``PipelineFileSpec``).
    package static var builtInKeys: [String] { PipelineFileSpec.pipeline.names }

    /// A registry with the `settings:` section and nothing else.
    public init() {
        sections[PipelineSettings.spec.name] = PipelineSettings.spec
    }

    /// Registers (or replaces) a stage type.
    public mutating func registerStage(_ spec: ComponentSpec, factory: @escaping StageFactory) {
        stages[spec.name] = Entry(spec: spec, factory: factory)
    }

    /// Registers (or replaces) a source type.
    public mutating func registerSource(_ spec: ComponentSpec, factory: @escaping SourceFactory) {
        sources[spec.name] = Entry(spec: spec, factory: factory)
    }

    /// Registers (or replaces) a sink type (usable under `sinks:` and as `dead_letter:`).
    public mutating func registerSink(_ spec: ComponentSpec, factory: @escaping SinkFactory) {
        sinks[spec.name] = Entry(spec: spec, factory: factory)
    }

    /// Registers (or replaces) a store type for the top-level `stores:`.
    public mutating func registerStore(_ spec: ComponentSpec, factory: @escaping StoreFactory) {
        stores[spec.name] = Entry(spec: spec, factory: factory)
    }

    /// Adds a check of the built pipeline (``pipelineChecks``).
    package mutating func registerPipelineCheck(_ check: @escaping @Sendable (Pipeline) throws -> Void) {
        pipelineChecks.append(check)
    }

    /// Registers (or replaces) a top-level section; the loader validates it and keeps the
    /// result in ``Pipeline/sections`` for the code that serves it (e.g. an `http:` section).
    public mutating func registerSection(_ spec: ComponentSpec) {
        precondition(!Self.builtInKeys.contains(spec.name), "'\(spec.name)' is a built-in top-level key")
        sections[spec.name] = spec
    }

    /// Every registered spec by kind, each list sorted by name (listings, docs, schema).
    public var catalog: [(kind: ComponentKind, specs: [ComponentSpec])] {
        func sorted<F>(_ table: [String: Entry<F>]) -> [ComponentSpec] { table.values.map(\.spec).sorted { $0.name < $1.name } }
        return [
            (.source, sorted(sources)), (.stage, sorted(stages)), (.sink, sorted(sinks)), (.store, sorted(stores)),
            (.section, sections.values.sorted { $0.name < $1.name }),
        ]
    }
}
