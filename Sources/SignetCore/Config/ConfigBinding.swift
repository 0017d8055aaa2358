/// One key of a component's configuration bound to the option it sets, so the key, its
/// type and its meaning are written once and its default is the options type's own value.
///
/// ```swift
/// ConfigBinding("max_body_bytes", \HTTPSource.Options.maxBodyBytes, .int(1024...(16 << 20)), "larger bodies get 413")
/// ```
///
/// A list of them is a ``ConfigBindings``: its fields go into the ``ComponentSpec`` and
/// it fills an options value from the ``ParsedConfig`` the loader validated.
public struct ConfigBinding<Options: Sendable>: Sendable {
    /// The YAML key.
    public let name: String
    private let type: ConfigFieldType
    private let description: String
    private let example: String?
    private let advanced: Bool
    /// The option's value at `options`, as YAML writes it (nil: unset).
    private let text: @Sendable (_ options: Options) -> String?
    private let apply: @Sendable (_ options: inout Options, _ config: ParsedConfig) throws(ConfigError) -> Void

    /// Binds `name` to the option at `keyPath`, taking the parsed value as it is, or as
    /// `check` returns it (to validate, or to normalise). `check` sees the options the
    /// keys before this one have set, and throws with `config.error(_:key:)`.
    public init<Value: ConfigBindable>(
        _ name: String, _ keyPath: any WritableKeyPath<Options, Value> & Sendable, _ type: ConfigFieldType,
        _ description: String, example: String? = nil, advanced: Bool = false,
        check: (@Sendable (_ value: Value, _ options: Options, _ config: ParsedConfig) throws(ConfigError) -> Value)? = nil
    ) {
        self.init(
            name, keyPath, type, description, example: example, advanced: advanced, written: { $0 },
            read: { value, options, config throws(ConfigError) in try check?(value, options, config) ?? value })
    }

    /// Binds `name` to an option of a type the configuration does not spell directly
    /// (a `ListenAddress` from `host:port`): `read` converts the parsed value (throwing
    /// when it cannot) and `written` turns the option's value back into what the file writes.
    public init<Raw: ConfigBindable, Value>(
        _ name: String, _ keyPath: any WritableKeyPath<Options, Value> & Sendable, _ type: ConfigFieldType,
        _ description: String, example: String? = nil, advanced: Bool = false,
        written: @escaping @Sendable (_ value: Value) -> Raw,
        read: @escaping @Sendable (_ raw: Raw, _ options: Options, _ config: ParsedConfig) throws(ConfigError) -> Value
    ) {
        self.name = name
        self.type = type
        self.description = description
        self.example = example
        self.advanced = advanced
        text = { options in written(options[keyPath: keyPath]).configText }
        apply = { options, config throws(ConfigError) in
            guard let raw = try Raw.configValue(name, in: config) else { throw config.absent(name) }
            options[keyPath: keyPath] = try read(raw, options, config)
        }
    }

    /// The field, defaulting to the option's value in `defaults` (optional when that is nil).
    public func field(defaults: Options) -> ConfigField {
        ConfigField(
            name, type, text(defaults).map(ConfigField.Requirement.default) ?? .optional, description,
            example: example, advanced: advanced)
    }

    /// The option's value in `options` as the file would write it; nil when unset.
    public func configText(of options: Options) -> String? { text(options) }

    /// Sets the option from `config`'s value for this key.
    public func apply(_ config: ParsedConfig, to options: inout Options) throws(ConfigError) {
        try apply(&options, config)
    }
}
