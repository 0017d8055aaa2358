/// A component's settings after validation against its ``ComponentSpec``: every value
/// typed, every default filled in, every key known.
///
/// Accessors do not take defaults or ranges: the spec says those once. They throw only
/// when asked for a key of another type or one the spec does not declare (a bug in the
/// component, reported as a configuration error rather than a crash).
public struct ParsedConfig: Sendable {
    /// A value and where it came from.
    public struct Entry: Sendable {
        /// The value, typed by the field's spec.
        public var value: ConfigValue
        /// The value's position, or the mapping's when the value is a default.
        public var location: ConfigLocation
        /// Whether the file wrote it (false: the spec's default).
        public var isExplicit: Bool
    }

    /// Dotted path in the file (`stages[2]`), for messages.
    public var path: String
    /// Where the mapping starts.
    public var location: ConfigLocation
    /// The mapping as written (after interpolation).
    public var node: ConfigNode
    /// Every field of the spec by key: given in the file, or its default.
    public private(set) var entries: [String: Entry]

    /// A validated mapping (the loader builds these).
    public init(path: String, location: ConfigLocation, node: ConfigNode, entries: [String: Entry]) {
        self.path = path
        self.location = location
        self.node = node
        self.entries = entries
    }

    /// Whether the file wrote `key` (defaults do not count).
    public func contains(_ key: String) -> Bool { entries[key]?.isExplicit ?? false }

    /// Where `key`'s value was written, or the mapping's position.
    public func location(of key: String) -> ConfigLocation { entries[key]?.location ?? location }

    /// An error about `key`'s value (or the whole mapping when nil), at its position.
    public func error(_ message: String, key: String? = nil) -> ConfigError {
        ConfigError(message, at: key.map(location(of:)) ?? location)
    }

    /// The typed value of `key` (nil when optional and absent).
    public func value(_ key: String) -> ConfigValue? { entries[key]?.value }

    /// The string at `key`, or nil when absent and without a default.
    public func optionalString(_ key: String) throws(ConfigError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw mismatch(key, "string") }
        return text
    }

    /// The string at `key`; throws, with the location, when absent.
    public func string(_ key: String) throws(ConfigError) -> String {
        guard let text = try optionalString(key) else { throw absent(key) }
        return text
    }

    /// The integer at `key`, or nil when absent and without a default.
    public func optionalInt(_ key: String) throws(ConfigError) -> Int? {
        guard let value = value(key) else { return nil }
        guard case .int(let number) = value else { throw mismatch(key, "int") }
        return number
    }

    /// The integer at `key`; throws, with the location, when absent.
    public func int(_ key: String) throws(ConfigError) -> Int {
        guard let number = try optionalInt(key) else { throw absent(key) }
        return number
    }

    /// The boolean at `key`, or nil when absent and without a default.
    public func optionalBool(_ key: String) throws(ConfigError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw mismatch(key, "bool") }
        return flag
    }

    /// The boolean at `key`; throws, with the location, when absent.
    public func bool(_ key: String) throws(ConfigError) -> Bool {
        guard let flag = try optionalBool(key) else { throw absent(key) }
        return flag
    }

    /// The duration at `key` (`250ms`, `5s`, `1h`), or nil when absent and without a default.
    public func optionalDuration(_ key: String) throws(ConfigError) -> Duration? {
        guard let value = value(key) else { return nil }
        guard case .duration(let duration) = value else { throw mismatch(key, "duration") }
        return duration
    }

    /// The duration at `key`; throws, with the location, when absent.
    public func duration(_ key: String) throws(ConfigError) -> Duration {
        guard let duration = try optionalDuration(key) else { throw absent(key) }
        return duration
    }

    /// A string list (nil when optional and absent).
    public func stringList(_ key: String) throws(ConfigError) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .stringList(let items) = value else { throw mismatch(key, "string list") }
        return items
    }

    /// A free-form string map in file order (empty when absent).
    public func stringMap(_ key: String) throws(ConfigError) -> [ConfigValue.StringMapEntry] {
        guard let value = value(key) else { return [] }
        guard case .stringMap(let entries) = value else { throw mismatch(key, "string map") }
        return entries
    }

    /// A nested object; when absent, one holding only its fields' defaults.
    public func object(_ key: String) throws(ConfigError) -> ParsedConfig? {
        guard let value = value(key) else { return nil }
        guard case .object(let object) = value else { throw mismatch(key, "object") }
        return object
    }

    /// A list of objects (empty when absent).
    public func objectList(_ key: String) throws(ConfigError) -> [ParsedConfig] {
        guard let value = value(key) else { return [] }
        guard case .objectList(let objects) = value else { throw mismatch(key, "object list") }
        return objects
    }

    /// A name -> value map in file order (empty when absent).
    public func map(_ key: String) throws(ConfigError) -> [ConfigValue.MapEntry] {
        guard let value = value(key) else { return [] }
        guard case .map(let entries) = value else { throw mismatch(key, "map") }
        return entries
    }

    private func mismatch(_ key: String, _ expected: String) -> ConfigError {
        ConfigError("internal: '\(path).\(key)' is not declared as a \(expected) in its spec", at: location)
    }

    /// The error for a key the spec requires and the mapping lacks (also ``ConfigBinding``'s).
    func absent(_ key: String) -> ConfigError {
        ConfigError("\(path.isEmpty ? "the pipeline" : "'\(path)'") needs '\(key)'", at: location)
    }
}
