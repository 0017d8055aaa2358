/// The keys of a component that set its options, in the order the spec lists them and
/// the options are filled: the ``ComponentSpec``'s fields and the options' parsing read
/// this one list, so a key and its default cannot drift apart.
///
/// ```swift
/// extension MySource.Options {
///     static let configuration = ConfigBindings(defaults: MySource.Options(), [
///         ConfigBinding("max_line_bytes", \.maxLineBytes, .int(1024...(1 << 20)), "longer lines are rejected"),
///     ])
/// }
/// // ComponentSpec(name: "mine", summary: "...", fields: MySource.Options.configuration.fields)
/// // options = try MySource.Options.configuration.options(config)
/// ```
public struct ConfigBindings<Options: Sendable>: Sendable {
    /// The options a mapping that writes no key gets; every field's default is read from here.
    public let defaults: Options
    /// One binding per key, in the order docs list them.
    public let bindings: [ConfigBinding<Options>]

    /// Bindings over `defaults`, the options a mapping that writes no key gets.
    public init(defaults: Options, _ bindings: [ConfigBinding<Options>]) {
        self.defaults = defaults
        self.bindings = bindings
    }

    /// The spec's fields, defaults rendered from ``defaults``.
    public var fields: [ConfigField] { bindings.map { $0.field(defaults: defaults) } }

    /// Sets every bound option of `options` from `config`, in order (a binding's check sees
    /// what the earlier ones set).
    public func apply(_ config: ParsedConfig, to options: inout Options) throws(ConfigError) {
        for binding in bindings { try binding.apply(config, to: &options) }
    }

    /// ``defaults`` with every bound option set from `config`.
    public func options(_ config: ParsedConfig) throws(ConfigError) -> Options {
        var options = defaults
        try apply(config, to: &options)
        return options
    }
}
