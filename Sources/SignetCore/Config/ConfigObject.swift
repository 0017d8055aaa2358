import Foundation

/// Reads one YAML mapping of a component's settings with precise errors.
///
/// Every accessor records the key as known; ``finish()`` then reports keys nobody
/// asked for, with a "did you mean" suggestion. Factories read all their keys and end
/// with `try config.finish()`.
public final class ConfigObject {
    public let node: ConfigNode
    private let pairs: [(key: ConfigNode, value: ConfigNode)]
    private var known: Set<String> = []

    public init(_ node: ConfigNode) throws(ConfigError) {
        self.node = node
        switch node.value {
        case .mapping(let pairs): self.pairs = pairs
        case .null: self.pairs = []
        default:
            throw ConfigError("\(Self.name(node.path)) must be a mapping, not \(node.kindDescription)", at: node.location)
        }
    }

    /// The location of this mapping, for errors about it as a whole.
    public var location: ConfigLocation { node.location }

    /// The value node for `key`, or nil when absent or null.
    public func node(_ key: String) -> ConfigNode? {
        known.insert(key)
        guard let pair = pairs.first(where: { if case .scalar(key) = $0.key.value { true } else { false } }) else {
            return nil
        }
        if case .null = pair.value.value { return nil }
        return pair.value
    }

    /// Whether `key` is present (without marking it read).
    public func contains(_ key: String) -> Bool {
        pairs.contains { if case .scalar(key) = $0.key.value { true } else { false } }
    }

    public func optionalString(_ key: String) throws(ConfigError) -> String? {
        guard let node = node(key) else { return nil }
        guard case .scalar(let text) = node.value else {
            throw ConfigError("\(Self.name(node.path)) must be a string, not \(node.kindDescription)", at: node.location)
        }
        return text
    }

    public func string(_ key: String) throws(ConfigError) -> String {
        guard let value = try optionalString(key) else { throw missing(key) }
        return value
    }

    public func string(_ key: String, default value: String) throws(ConfigError) -> String {
        try optionalString(key) ?? value
    }

    /// A string that must be one of `allowed`.
    public func choice(_ key: String, _ allowed: [String], default value: String? = nil) throws(ConfigError) -> String {
        guard let text = try optionalString(key) else {
            if let value { return value }
            throw missing(key)
        }
        guard allowed.contains(text) else {
            let at = node(key)?.location ?? location
            throw ConfigError(
                "'\(text)' is not a valid \(key); expected one of: \(allowed.joined(separator: ", "))"
                    + Self.suggestion(for: text, among: allowed), at: at)
        }
        return text
    }

    public func optionalInt(_ key: String, in range: ClosedRange<Int>? = nil) throws(ConfigError) -> Int? {
        guard let node = node(key) else { return nil }
        guard case .scalar(let text) = node.value, let value = Int(text.replacingOccurrences(of: "_", with: "")) else {
            throw ConfigError("\(Self.name(node.path)) must be an integer, got \(Self.show(node))", at: node.location)
        }
        if let range, !range.contains(value) {
            throw ConfigError(
                "\(Self.name(node.path)) must be between \(range.lowerBound) and \(range.upperBound), got \(value)",
                at: node.location)
        }
        return value
    }

    public func int(_ key: String, default value: Int, in range: ClosedRange<Int>? = nil) throws(ConfigError) -> Int {
        try optionalInt(key, in: range) ?? value
    }

    public func optionalBool(_ key: String) throws(ConfigError) -> Bool? {
        guard let node = node(key) else { return nil }
        guard case .scalar(let text) = node.value else {
            throw ConfigError("\(Self.name(node.path)) must be true or false, got \(Self.show(node))", at: node.location)
        }
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default:
            throw ConfigError("\(Self.name(node.path)) must be true or false, got '\(text)'", at: node.location)
        }
    }

    public func bool(_ key: String, default value: Bool) throws(ConfigError) -> Bool {
        try optionalBool(key) ?? value
    }

    /// A duration: a number with a unit (`250ms`, `5s`, `10m`, `24h`, `30d`); a bare number is an error.
    public func optionalDuration(_ key: String) throws(ConfigError) -> Duration? {
        guard let node = node(key) else { return nil }
        guard case .scalar(let text) = node.value else {
            throw ConfigError(
                "\(Self.name(node.path)) must be a duration such as 500ms, 30s, 5m, 24h or 7d, got \(node.kindDescription)",
                at: node.location)
        }
        switch ConfigDuration.parse(text) {
        case .success(let duration): return duration
        case .failure(let error):
            throw ConfigError("\(Self.name(node.path)) must be a duration (\(error.hint)), got '\(text)'", at: node.location)
        }
    }

    public func duration(_ key: String, default value: Duration) throws(ConfigError) -> Duration {
        try optionalDuration(key) ?? value
    }

    /// A list of strings; a single scalar is accepted too and split on commas, so one
    /// environment variable can carry several values (`SIGNET_ROOT_CERTS=a.pem,b.pem`).
    public func stringList(_ key: String) throws(ConfigError) -> [String]? {
        guard let node = node(key) else { return nil }
        switch node.value {
        case .scalar(let text):
            return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        case .sequence(let items):
            var result: [String] = []
            for item in items {
                guard case .scalar(let text) = item.value else {
                    throw ConfigError("\(Self.name(item.path)) must be a string, not \(item.kindDescription)", at: item.location)
                }
                result.append(text)
            }
            return result
        default:
            throw ConfigError("\(Self.name(node.path)) must be a string or a list of strings", at: node.location)
        }
    }

    /// A nested mapping.
    public func object(_ key: String) throws(ConfigError) -> ConfigObject? {
        guard let node = node(key) else { return nil }
        return try ConfigObject(node)
    }

    /// A list of nodes.
    public func list(_ key: String) throws(ConfigError) -> [ConfigNode]? {
        guard let node = node(key) else { return nil }
        guard case .sequence(let items) = node.value else {
            throw ConfigError("\(Self.name(node.path)) must be a list, not \(node.kindDescription)", at: node.location)
        }
        return items
    }

    /// The entries of a mapping whose keys are free-form names (e.g. `sinks:`), in file order.
    public func entries() -> [(name: String, node: ConfigNode)] {
        pairs.compactMap { pair in
            guard case .scalar(let name) = pair.key.value else { return nil }
            known.insert(name)
            return (name, pair.value)
        }
    }

    /// A free-form string map (e.g. librdkafka properties), values as written.
    public func stringMap(_ key: String) throws(ConfigError) -> [(key: String, value: String, location: ConfigLocation)]? {
        guard let object = try object(key) else { return nil }
        var result: [(key: String, value: String, location: ConfigLocation)] = []
        for (name, node) in object.entries() {
            switch node.value {
            case .scalar(let text): result.append((name, text, node.location))
            case .null: continue
            default:
                throw ConfigError("\(Self.name(node.path)) must be a string, not \(node.kindDescription)", at: node.location)
            }
        }
        return result
    }

    /// Reports the first key that no accessor read.
    public func finish() throws(ConfigError) {
        for pair in pairs {
            guard case .scalar(let name) = pair.key.value, !known.contains(name) else { continue }
            let scope = node.path.isEmpty ? "at the top level" : "in '\(node.path)'"
            throw ConfigError(
                "unknown key '\(name)' \(scope)" + Self.suggestion(for: name, among: Array(known)),
                at: pair.key.location)
        }
    }

    /// The error for a required key that is missing.
    public func missing(_ key: String) -> ConfigError {
        let scope = node.path.isEmpty ? "the pipeline" : "'\(node.path)'"
        return ConfigError("\(scope) needs '\(key)'", at: location)
    }

    /// An error about the value of `key` (or this mapping when absent).
    public func error(_ message: String, key: String? = nil) -> ConfigError {
        let at = key.flatMap { key in pairs.first { if case .scalar(key) = $0.key.value { true } else { false } }?.value.location }
        return ConfigError(message, at: at ?? location)
    }

    static func name(_ path: String) -> String { path.isEmpty ? "the document" : "'\(path)'" }

    static func show(_ node: ConfigNode) -> String {
        if case .scalar(let text) = node.value { return "'\(text)'" }
        return node.kindDescription
    }

    /// " (did you mean 'x'?)" when a known word is within a small edit distance.
    public static func suggestion(for word: String, among candidates: [String]) -> String {
        let best = candidates
            .map { ($0, editDistance(word, $0)) }
            .filter { $0.1 <= max(2, word.count / 3) && $0.1 < word.count }
            .min { $0.1 < $1.1 }
        return best.map { " (did you mean '\($0.0)'?)" } ?? ""
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
