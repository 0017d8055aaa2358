/// A value a ``ConfigBinding`` can read from a validated configuration and write back as
/// YAML text, so an options type's default becomes its field's `.default(...)`.
///
/// `Int`, `Bool`, `String`, `Duration` and an `Optional` of any of them conform; a key of
/// another type binds through a conversion (``ConfigBinding/init(_:_:_:_:example:advanced:written:read:)``).
public protocol ConfigBindable: Sendable {
    /// This value as a pipeline file writes it (`65536`, `true`, `10s`); nil when there is
    /// none (an optional left unset), which makes the field ``ConfigField/Requirement/optional``.
    var configText: String? { get }

    /// `key`'s value in `config`, nil when absent (only an optional key is ever absent:
    /// the loader fills in defaults).
    static func configValue(_ key: String, in config: ParsedConfig) throws(ConfigError) -> Self?
}

extension Int: ConfigBindable {
    public var configText: String? { String(self) }
    public static func configValue(_ key: String, in config: ParsedConfig) throws(ConfigError) -> Int? {
        try config.optionalInt(key)
    }
}

extension Bool: ConfigBindable {
    public var configText: String? { self ? "true" : "false" }
    public static func configValue(_ key: String, in config: ParsedConfig) throws(ConfigError) -> Bool? {
        try config.optionalBool(key)
    }
}

extension String: ConfigBindable {
    public var configText: String? { self }
    public static func configValue(_ key: String, in config: ParsedConfig) throws(ConfigError) -> String? {
        try config.optionalString(key)
    }
}

extension Duration: ConfigBindable {
    /// The shortest exact spelling (``ConfigDuration/format(_:)``), which the parser reads back.
    public var configText: String? { ConfigDuration.format(self) }
    public static func configValue(_ key: String, in config: ParsedConfig) throws(ConfigError) -> Duration? {
        try config.optionalDuration(key)
    }
}

extension Optional: ConfigBindable where Wrapped: ConfigBindable {
    public var configText: String? { self?.configText }
    /// Never nil itself: an absent key is the value `nil`, not a missing one.
    public static func configValue(_ key: String, in config: ParsedConfig) throws(ConfigError) -> Wrapped?? {
        .some(try Wrapped.configValue(key, in: config))
    }
}

/// An enumeration written as its raw value (`mode: batch`); the spec's
/// ``ConfigFieldType/enumeration(_:)`` lists the same values, so a validated one always reads.
extension ConfigBindable where Self: RawRepresentable, RawValue == String {
    public var configText: String? { rawValue }
    public static func configValue(_ key: String, in config: ParsedConfig) throws(ConfigError) -> Self? {
        guard let text = try config.optionalString(key) else { return nil }
        guard let value = Self(rawValue: text) else {
            throw config.error("internal: '\(config.path).\(key)' allows '\(text)', which \(Self.self) does not have", key: key)
        }
        return value
    }
}
