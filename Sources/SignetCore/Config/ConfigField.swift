/// One key of a component's configuration: its type, whether it is required or what
/// it defaults to, and what it means. Written once; parsing, `signet lint`, `signet
/// components`, docs/pipelines.md and Schemas/pipeline.schema.json all read it. A key
/// that sets an option is declared as a ``ConfigBinding`` instead, so its default is the
/// option's own value rather than a second copy of it.
///
/// ```swift
/// ConfigField("bundle_id", .string, .required, "your app's bundle id", example: "com.example.app")
/// ConfigField("workers", .int(0...256), .default("0"), "threads verifying signatures; 0 = every core")
/// ```
public struct ConfigField: Sendable {
    /// Whether a key must be written, may be left out, or takes a default.
    public enum Requirement: Sendable, Equatable {
        /// Must be given.
        case required
        /// May be left out; the factory sees nil.
        case optional
        /// Absent means this value, written as it would be in YAML (`5m`, `true`, `apple`).
        case `default`(String)
    }

    /// The key as written in YAML (`snake_case`).
    public var name: String
    /// What the value must be.
    public var type: ConfigFieldType
    /// Whether it must be given, or its default.
    public var requirement: Requirement
    /// One sentence for the reference tables, lint and `signet components`.
    public var description: String
    /// A value to show in docs (YAML as written).
    public var example: String?
    /// Tuning knobs most pipelines never set; listed after the others.
    public var advanced: Bool

    /// A field: its key, type, requirement and description.
    public init(
        _ name: String, _ type: ConfigFieldType, _ requirement: Requirement, _ description: String,
        example: String? = nil, advanced: Bool = false
    ) {
        self.name = name
        self.type = type
        self.requirement = requirement
        self.description = description
        self.example = example
        self.advanced = advanced
    }

    /// Whether the key must be given.
    public var isRequired: Bool { requirement == .required }

    /// The default as written, if any.
    public var defaultValue: String? {
        if case .default(let value) = requirement { return value }
        return nil
    }
}
