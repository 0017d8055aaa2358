import Yams

/// A YAML value with the place it was written, after `${VAR}` interpolation.
///
/// Signet reads configuration through this tree (not `Codable`) so that every error
/// can name the file, line and column of the offending value.
public struct ConfigNode: Sendable {
    /// What a node holds.
    public enum Value: Sendable {
        /// A scalar as written (after interpolation). Plain `null`, `~` and empty scalars are ``null``.
        case scalar(String)
        /// A mapping's entries, in file order.
        case mapping([(key: ConfigNode, value: ConfigNode)])
        /// A sequence's items, in file order.
        case sequence([ConfigNode])
        /// No value (`null`, `~` or nothing).
        case null
    }

    /// The value, after `${VAR}` interpolation.
    public var value: Value
    /// Where it was written.
    public var location: ConfigLocation
    /// Dotted path from the document root, e.g. `stages[1].bundle_id`, for messages.
    public var path: String
    /// Whether the scalar holds the stand-in for an unset `${VAR}` (only while linting):
    /// a type error in it is not reported, the unset variable already is.
    public var isPlaceholder: Bool

    /// A node as parsed (tests build trees by hand with it).
    public init(value: Value, location: ConfigLocation, path: String, isPlaceholder: Bool = false) {
        self.value = value
        self.location = location
        self.path = path
        self.isPlaceholder = isPlaceholder
    }

    /// Parses YAML text into a located tree, interpolating environment variables in scalars.
    public static func parse(
        yaml text: String, file: String, environment: [String: String]
    ) throws(ConfigError) -> ConfigNode {
        try parse(yaml: text, file: file, interpolator: Interpolator(environment: environment))
    }

    static func parse(yaml text: String, file: String, interpolator: Interpolator) throws(ConfigError) -> ConfigNode {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw Self.convert(error, file: file, text: text)
        } catch {
            throw ConfigError("cannot parse YAML: \(error)", at: nil)
        }
        guard let root else {
            throw ConfigError("the file is empty", at: ConfigLocation(file: file, line: 1, column: 1))
        }
        return try build(root, file: file, path: "", interpolator: interpolator)
    }

    private static func build(
        _ node: Node, file: String, path: String, interpolator: Interpolator
    ) throws(ConfigError) -> ConfigNode {
        let location = ConfigLocation(file: file, line: node.mark?.line ?? 1, column: node.mark?.column ?? 1)
        switch node {
        case .scalar(let scalar):
            let isPlain = scalar.style == .plain || scalar.style == .any
            if isPlain, ["", "~", "null", "Null", "NULL"].contains(scalar.string) {
                return ConfigNode(value: .null, location: location, path: path)
            }
            let unsetBefore = interpolator.unset.count
            let text = try interpolator.interpolate(scalar.string, at: location, path: path)
            return ConfigNode(
                value: text.isEmpty ? .null : .scalar(text), location: location, path: path,
                isPlaceholder: interpolator.unset.count > unsetBefore)
        case .mapping(let mapping):
            var pairs: [(key: ConfigNode, value: ConfigNode)] = []
            for (key, value) in mapping {
                let keyNode = try build(key, file: file, path: path, interpolator: interpolator)
                guard case .scalar(let name) = keyNode.value else {
                    throw ConfigError("mapping keys must be plain strings", at: keyNode.location)
                }
                let childPath = path.isEmpty ? name : "\(path).\(name)"
                pairs.append((keyNode, try build(value, file: file, path: childPath, interpolator: interpolator)))
            }
            return ConfigNode(value: .mapping(pairs), location: location, path: path)
        case .sequence(let sequence):
            var items: [ConfigNode] = []
            for (index, item) in sequence.enumerated() {
                items.append(try build(item, file: file, path: "\(path)[\(index)]", interpolator: interpolator))
            }
            return ConfigNode(value: .sequence(items), location: location, path: path)
        case .alias(let alias):
            // Yams expands aliases while composing, so this is only reached by a dangling one.
            throw ConfigError("YAML alias '*\(alias.anchor)' does not refer to an anchor", at: location)
        }
    }

    private static func convert(_ error: YamlError, file: String, text: String) -> ConfigError {
        func at(_ mark: Mark) -> ConfigLocation { ConfigLocation(file: file, line: mark.line, column: mark.column) }
        switch error {
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let prefix = context.map { "\($0.text): " } ?? ""
            let hint = YAMLSyntaxHint.hint(text: text, line: mark.line, contextLine: context?.mark.line)
            return ConfigError("invalid YAML: \(prefix)\(problem)" + (hint.map { " (hint: \($0))" } ?? ""), at: at(mark))
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ConfigError(
                "duplicate key \(duplicates.map { "'\($0)'" }.joined(separator: ", ")) in a mapping",
                at: at(context.mark))
        case .reader(let problem, _, _, _):
            return ConfigError("cannot read YAML: \(problem)", at: nil)
        default:
            return ConfigError("invalid YAML: \(error)", at: nil)
        }
    }

    /// A short name of the node's kind for messages ("a string", "a list", ...).
    public var kindDescription: String {
        switch value {
        case .scalar: "a scalar"
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .null: "null"
        }
    }
}
