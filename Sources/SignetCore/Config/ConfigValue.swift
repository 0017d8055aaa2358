/// A typed configuration value, after validation against its ``ConfigFieldType``.
public enum ConfigValue: Sendable {
    /// A `.string` or `.enumeration` field.
    case string(String)
    /// An `.int` field.
    case int(Int)
    /// A `.bool` field.
    case bool(Bool)
    /// A `.duration` field (`30s`, `5m`).
    case duration(Duration)
    /// A `.stringList` field.
    case stringList([String])
    /// A `.stringMap` field, entries in file order.
    case stringMap([StringMapEntry])
    /// An `.object` field, validated against its own fields.
    case object(ParsedConfig)
    /// An `.objectList` field, each item validated.
    case objectList([ParsedConfig])
    /// A `.map` field: names to values of one type, in file order.
    case map([MapEntry])

    /// One entry of a free-form string map, with where it was written.
    public struct StringMapEntry: Sendable {
        /// The key as written.
        public var key: String
        /// The value as written (after interpolation).
        public var value: String
        /// Where the entry was written.
        public var location: ConfigLocation
    }

    /// One entry of a name -> value map, with where it was written.
    public struct MapEntry: Sendable {
        /// The entry's name (its key).
        public var name: String
        /// The entry's validated value.
        public var value: ConfigValue
        /// Where the entry was written.
        public var location: ConfigLocation
    }
}
