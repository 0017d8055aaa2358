/// Something stages share that the pipeline owns: a state store, a connection pool.
///
/// Declared by name under the pipeline file's top-level `stores:`, built by the loader
/// (without I/O: `signet lint` builds resources too), handed to the components that
/// name it through ``ComponentContext/resource(named:as:)``, opened by the runner
/// before any source, stage or sink and closed after all of them.
public protocol PipelineResource: Sendable {
    /// Opens connections or files. Called once, before anything that uses it.
    func open() async throws
    /// Releases it. Called once, after everything that used it closed (also after a failure).
    func close() async throws
    /// What the resource opens (e.g. `sqlite:/abs/path/signet.sqlite`), or nil. Two
    /// resources of one pipeline with the same identity are a configuration error: they
    /// would open one database twice with possibly different options.
    var identity: String? { get }
    /// What an operator should see at start once it is open (the database and what it holds
    /// that changes answers), or nil for nothing beyond the name.
    var summary: String? { get }
}

extension PipelineResource {
    public func open() async throws {}
    public func close() async throws {}
    public var identity: String? { nil }
    public var summary: String? { nil }
}

/// A resource with the name the pipeline file gave it.
public struct NamedResource: Sendable {
    /// The name stages refer to it by (`stores:` key).
    public var name: String
    /// The registered type it was built from (`sqlite`, `memory`, ...).
    public var type: String
    /// The resource.
    public var resource: any PipelineResource

    /// `resource` of `type` under `name`.
    public init(name: String, type: String, resource: any PipelineResource) {
        self.name = name
        self.type = type
        self.resource = resource
    }
}
