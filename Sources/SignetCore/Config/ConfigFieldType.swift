/// The type of a configuration key, as a ``ConfigField`` declares it.
///
/// Values are typed after `${VAR}` interpolation, so every type also accepts a string
/// in YAML (the JSON schema says so too).
public indirect enum ConfigFieldType: Sendable {
    /// Any scalar, taken as written.
    case string
    /// An integer (`_` separators allowed), optionally within a range.
    case int(ClosedRange<Int>?)
    /// `true`/`false` (also `yes`/`no`, `on`/`off`, `1`/`0`).
    case bool
    /// A number with a unit (`250ms`, `5s`, `10m`, `24h`, `30d`), optionally within a range.
    /// A bare number is an error that suggests the units: `100` is ambiguous.
    case duration(ClosedRange<Duration>?)
    /// One of a fixed set of strings.
    case enumeration([String])
    /// A list of strings, or one scalar split on commas (so one environment variable can
    /// carry several values); with `allowed`, every item must be one of them.
    case stringList(allowed: [String]?)
    /// A free-form mapping of names to scalars (e.g. librdkafka properties).
    case stringMap
    /// A nested mapping with its own fields.
    case object([ConfigField])
    /// A list of mappings, each with these fields.
    case objectList([ConfigField])
    /// A mapping of free-form names to values of one type (e.g. product id -> duration).
    case map(ConfigFieldType)
    /// The name of an entry of the pipeline's top-level `stores:`; the loader checks it
    /// exists (the name `default` always does: an implicit store of the default type).
    case storeName

    /// A short name of the type for tables and messages.
    public var displayName: String {
        switch self {
        case .string: "string"
        case .int(let range?) where range.upperBound == Int.max: "int >= \(range.lowerBound)"
        case .int(let range?): "int \(range.lowerBound)...\(range.upperBound)"
        case .int(nil): "int"
        case .bool: "bool"
        case .duration(let range?): "duration \(ConfigDuration.format(range.lowerBound))...\(ConfigDuration.format(range.upperBound))"
        case .duration(nil): "duration"
        case .enumeration(let values): values.joined(separator: " | ")
        case .stringList(let allowed?): "list of " + allowed.joined(separator: " | ")
        case .stringList(nil): "list of strings"
        case .stringMap: "map of strings"
        case .object: "object"
        case .objectList: "list of objects"
        case .map(let value): "map of name -> \(value.displayName)"
        case .storeName: "store name"
        }
    }

    /// A stable machine-readable name (`signet components --json`).
    public var kindName: String {
        switch self {
        case .string: "string"
        case .int: "int"
        case .bool: "bool"
        case .duration: "duration"
        case .enumeration: "enum"
        case .stringList: "string_list"
        case .stringMap: "string_map"
        case .object: "object"
        case .objectList: "object_list"
        case .map: "map"
        case .storeName: "store_name"
        }
    }
}
