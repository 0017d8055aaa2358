/// Everything a pipeline file may say about one component type, declared once beside
/// the component's code (Redpanda Connect's `ConfigSpec` is the model).
///
/// The loader validates a component's mapping against its spec before the factory
/// runs (unknown keys with "did you mean", types, ranges, allowed values, required
/// keys, all at file:line:column) and fills in defaults, so a factory reads typed
/// values from a ``ParsedConfig`` and only checks what depends on several keys.
public struct ComponentSpec: Sendable {
    /// The `type:` name (or, for a section, its top-level key).
    public var name: String
    /// One line for listings.
    public var summary: String
    /// Longer prose for docs (optional).
    public var description: String
    /// The keys the component accepts, in the order docs list them.
    public var fields: [ConfigField]
    /// Complete YAML snippets that show the component in use.
    public var examples: [String]
    /// Stage types that must come earlier in `stages:` (stages only): `transition`
    /// needs `verify` before it. Checked by the loader, so `signet lint` reports it.
    public var requiresBefore: [String]
    /// What the stage does that other stages may build themselves around (stages only):
    /// `transition` ``StageTrait/replacesOutputs``. The loader tells every stage's factory
    /// what the others declare (``ComponentContext/laterStage(declares:)``).
    public var traits: Set<StageTrait>
    /// Keys that no longer exist, with what to write instead; reported when written.
    public var retiredKeys: [String: String]
    /// Stores only: the store type `signet test` substitutes (e.g. `memory`), so
    /// pipeline tests write no files and need no server.
    public var testSubstitute: String?
    /// Skips key validation: the factory reads undeclared keys from its ``ParsedConfig/node``
    /// itself. Such a component shows no keys.
    public var acceptsAnyKeys: Bool
    /// The reason codes it rejects records or dead-letters messages with
    /// (docs/reason-codes.md). A pipeline exports each at 0 from its start
    /// (`signet_dead_letters_total`, `signet_records_rejected_total`), so an alert's
    /// `increase()` sees the first one, even in a process that ran for weeks.
    public var rejects: [ReasonCode]

    /// A component's definition; only `name` and `summary` are required.
    public init(
        name: String, summary: String, description: String = "", fields: [ConfigField] = [],
        examples: [String] = [], requiresBefore: [String] = [], traits: Set<StageTrait> = [],
        retiredKeys: [String: String] = [:], testSubstitute: String? = nil, acceptsAnyKeys: Bool = false,
        rejects: [ReasonCode] = []
    ) {
        self.rejects = rejects
        self.name = name
        self.summary = summary
        self.description = description
        self.fields = fields
        self.examples = examples
        self.requiresBefore = requiresBefore
        self.traits = traits
        self.retiredKeys = retiredKeys
        self.testSubstitute = testSubstitute
        self.acceptsAnyKeys = acceptsAnyKeys
    }

    /// The field named `name`, if declared.
    public func field(_ name: String) -> ConfigField? { fields.first { $0.name == name } }
}

extension ComponentSpec {
    /// Validates one component's mapping against this spec, as the loader does before
    /// calling the factory (for tests and for code that builds one component alone).
    /// Throws the first problem in file order; `type:` is ignored.
    public func parse(_ node: ConfigNode, storeNames: [String] = ["default"]) throws(ConfigError) -> ParsedConfig {
        var validator = ConfigValidator(storeNames: storeNames)
        let parsed = validator.validate(
            node, fields: fields, reserved: ["type"], retiredKeys: retiredKeys, allowsUnknownKeys: acceptsAnyKeys)
        if let first = PipelineLoader.sorted(validator.errors).first { throw first }
        return parsed
    }
}
