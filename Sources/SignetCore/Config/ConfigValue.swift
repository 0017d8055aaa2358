/// A typed configuration value, after validation against its ``ConfigFieldType``.
public enum ConfigValue: Sendable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case duration(Duration)
    case stringList([String])
    case stringMap([StringMapEntry])
    case object(ParsedConfig)
    case objectList([ParsedConfig])
    case map([MapEntry])

    /// One entry of a free-form string map, with where it was written.
    public struct StringMapEntry: Sendable {
        public var key: String
        public var value: String
        public var location: ConfigLocation
    }

    /// One entry of a name -> value map, with where it was written.
    public struct MapEntry: Sendable {
        public var name: String
        public var value: ConfigValue
        public var location: ConfigLocation
    }
}
