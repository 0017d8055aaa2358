import Foundation

/// Checks a mapping against a list of ``ConfigField``s and types its values.
///
/// Keeps going after a problem so one `signet lint` shows every one; the caller reads
/// ``errors`` afterwards. A value that holds an unset `${VAR}` placeholder (only while
/// linting) never fails typing: the unset variable is reported as a warning instead,
/// and the field's default or example stands in so the rest can still be checked.
package struct ConfigValidator {
    /// Names a `.storeName` field may take.
    package var storeNames: [String]
    package private(set) var errors: [ConfigError] = []
    /// Store names the validated values refer to, with where.
    private(set) var storeReferences: [(name: String, location: ConfigLocation)] = []

    package init(storeNames: [String]) {
        self.storeNames = storeNames
    }

    /// Validates the mapping `node` (null counts as empty) against `fields`.
    /// Keys in `reserved` (such as `type`) belong to the caller and are skipped; with
    /// `allowsUnknownKeys` so is every undeclared key (components that read their own).
    package mutating func validate(
        _ node: ConfigNode, fields: [ConfigField], reserved: Set<String> = [],
        retiredKeys: [String: String] = [:], allowsUnknownKeys: Bool = false
    ) -> ParsedConfig {
        let pairs: [(key: ConfigNode, value: ConfigNode)]
        switch node.value {
        case .mapping(let mapping): pairs = mapping
        case .null: pairs = []
        default:
            errors.append(ConfigError("\(ConfigWording.name(node.path)) must be a mapping, not \(node.kindDescription)", at: node.location))
            pairs = []
        }
        var entries: [String: ParsedConfig.Entry] = [:]
        var unknown: [(name: String, location: ConfigLocation)] = []
        var written: Set<String> = []  // with a value, typed or not (a type error is reported once)
        let names = fields.map(\.name)
        for (keyNode, valueNode) in pairs {
            guard case .scalar(let key) = keyNode.value, !reserved.contains(key) else { continue }
            guard let field = fields.first(where: { $0.name == key }) else {
                if allowsUnknownKeys { continue }
                unknown.append((key, keyNode.location))
                let scope = node.path.isEmpty ? "at the top level" : "in '\(node.path)'"
                let advice = retiredKeys[key].map { ": \($0)" } ?? ConfigWording.suggestion(for: key, among: names)
                errors.append(ConfigError("unknown key '\(key)' \(scope)\(advice)", at: keyNode.location))
                continue
            }
            if case .null = valueNode.value { continue }  // `key:` with nothing is the same as leaving it out
            written.insert(key)
            if let value = decode(valueNode, as: field.type, fallback: field.defaultValue ?? field.example) {
                entries[key] = ParsedConfig.Entry(value: value, location: valueNode.location, isExplicit: true)
            }
        }
        for field in fields where entries[field.name] == nil && !written.contains(field.name) {
            if let value = implicitValue(of: field, in: node) {
                entries[field.name] = ParsedConfig.Entry(value: value, location: node.location, isExplicit: false)
            } else if field.isRequired, !pairs.contains(where: { if case .scalar(field.name) = $0.key.value { true } else { false } }) {
                let scope = node.path.isEmpty ? "the pipeline" : "'\(node.path)'"
                let typo = unknown.first { ConfigWording.suggestion(for: $0.name, among: [field.name]) != "" }
                let hint = typo.map { " ('\($0.name)' at \($0.location.line):\($0.location.column) looks like a misspelling of it)" } ?? ""
                errors.append(ConfigError("\(scope) needs '\(field.name)'\(hint)", at: node.location))
            } else if field.isRequired {
                errors.append(ConfigError("'\(Self.join(node.path, field.name))' needs a value", at: node.location))
            }
        }
        return ParsedConfig(path: node.path, location: node.location, node: node, entries: entries)
    }

    /// The default of an absent field: its declared default, or for an object the
    /// object of its fields' defaults.
    private mutating func implicitValue(of field: ConfigField, in parent: ConfigNode) -> ConfigValue? {
        let path = Self.join(parent.path, field.name)
        if let text = field.defaultValue {
            let node = ConfigNode(value: .scalar(text), location: parent.location, path: path)
            return decode(node, as: field.type, fallback: nil)
        }
        if field.requirement == .optional, case .object(let fields) = field.type {
            return .object(validate(ConfigNode(value: .null, location: parent.location, path: path), fields: fields))
        }
        return nil
    }

    /// Types one value; nil (with an error recorded) when it does not fit.
    private mutating func decode(_ node: ConfigNode, as type: ConfigFieldType, fallback: String?) -> ConfigValue? {
        // An unset ${VAR} while linting stands for a value of the deployment: the field's
        // default or example is the likeliest one, and keeps factories from judging "1"
        // (as a certificate path, say).
        if node.isPlaceholder, let fallback,
            case .success(let value) = decodeStrict(ConfigNode(value: .scalar(fallback), location: node.location, path: node.path), as: type)
        {
            return value
        }
        switch decodeStrict(node, as: type) {
        case .success(let value):
            return value
        case .failure(let error):
            guard node.isPlaceholder else {
                errors.append(error)
                return nil
            }
            // An unset ${VAR} while linting: already a warning; stand in a value of the right type.
            return Self.zeroValue(of: type, node: node)
        }
    }

    private mutating func decodeStrict(_ node: ConfigNode, as type: ConfigFieldType) -> Result<ConfigValue, ConfigError> {
        let name = ConfigWording.name(node.path)
        func fail(_ message: String) -> Result<ConfigValue, ConfigError> { .failure(ConfigError(message, at: node.location)) }
        func scalar(_ expected: String) -> Result<String, ConfigError> {
            if case .scalar(let text) = node.value { return .success(text) }
            return .failure(ConfigError("\(name) must be \(expected), not \(node.kindDescription)", at: node.location))
        }
        switch type {
        case .string:
            return scalar("a string").map(ConfigValue.string)
        case .storeName:
            switch scalar("a store name") {
            case .failure(let error): return .failure(error)
            case .success(let text):
                guard storeNames.contains(text) else {
                    let known = storeNames.joined(separator: ", ")
                    return fail("unknown store '\(text)' (the pipeline's stores: \(known))" + ConfigWording.suggestion(for: text, among: storeNames))
                }
                storeReferences.append((text, node.location))
                return .success(.string(text))
            }
        case .int(let range):
            guard case .scalar(let text) = node.value, let value = Int(text.replacingOccurrences(of: "_", with: "")) else {
                return fail("\(name) must be an integer, got \(ConfigWording.show(node))")
            }
            if let range, !range.contains(value) {
                if range.upperBound == Int.max { return fail("\(name) must be at least \(range.lowerBound), got \(value)") }
                return fail("\(name) must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
            }
            return .success(.int(value))
        case .bool:
            guard case .scalar(let text) = node.value, let flag = Self.bool(text) else {
                return fail("\(name) must be true or false, got \(ConfigWording.show(node))")
            }
            return .success(.bool(flag))
        case .duration(let range):
            guard case .scalar(let text) = node.value else {
                return fail("\(name) must be a duration such as 500ms, 30s, 5m, 24h or 7d, got \(node.kindDescription)")
            }
            switch ConfigDuration.parse(text) {
            case .failure(let error):
                return fail("\(name) must be a duration (\(error.hint)), got '\(text)'")
            case .success(let duration):
                if let range, !range.contains(duration) {
                    return fail(
                        "\(name) must be between \(ConfigDuration.format(range.lowerBound)) and \(ConfigDuration.format(range.upperBound)), got \(text)")
                }
                return .success(.duration(duration))
            }
        case .enumeration(let allowed):
            switch scalar("one of: \(allowed.joined(separator: ", "))") {
            case .failure(let error): return .failure(error)
            case .success(let text):
                guard allowed.contains(text) else {
                    return fail(
                        "'\(text)' is not a valid \(Self.lastComponent(node.path)); expected one of: \(allowed.joined(separator: ", "))"
                            + ConfigWording.suggestion(for: text, among: allowed))
                }
                return .success(.string(text))
            }
        case .stringList(let allowed):
            var items: [(text: String, location: ConfigLocation)] = []
            switch node.value {
            case .scalar(let text):
                items = text.split(separator: ",").map { ($0.trimmingCharacters(in: .whitespaces), node.location) }.filter { !$0.0.isEmpty }
            case .sequence(let nodes):
                for item in nodes {
                    guard case .scalar(let text) = item.value else {
                        return .failure(ConfigError("\(ConfigWording.name(item.path)) must be a string, not \(item.kindDescription)", at: item.location))
                    }
                    items.append((text, item.location))
                }
            default:
                return fail("\(name) must be a string or a list of strings")
            }
            if let allowed {
                for item in items where !allowed.contains(item.text) {
                    return .failure(ConfigError(
                        "'\(item.text)' is not allowed in \(name); expected one of: \(allowed.joined(separator: ", "))"
                            + ConfigWording.suggestion(for: item.text, among: allowed), at: item.location))
                }
            }
            return .success(.stringList(items.map(\.text)))
        case .stringMap:
            guard case .mapping(let pairs) = node.value else { return fail("\(name) must be a mapping, not \(node.kindDescription)") }
            var entries: [ConfigValue.StringMapEntry] = []
            for (key, value) in pairs {
                guard case .scalar(let name) = key.value else { continue }
                switch value.value {
                case .scalar(let text): entries.append(.init(key: name, value: text, location: value.location))
                case .null: continue
                default:
                    return .failure(ConfigError("\(ConfigWording.name(value.path)) must be a string, not \(value.kindDescription)", at: value.location))
                }
            }
            return .success(.stringMap(entries))
        case .object(let fields):
            guard case .mapping = node.value else { return fail("\(name) must be a mapping, not \(node.kindDescription)") }
            return .success(.object(validate(node, fields: fields)))
        case .objectList(let fields):
            guard case .sequence(let items) = node.value else { return fail("\(name) must be a list, not \(node.kindDescription)") }
            var objects: [ParsedConfig] = []
            for item in items {
                guard case .mapping = item.value else {
                    return .failure(ConfigError("\(ConfigWording.name(item.path)) must be a mapping, not \(item.kindDescription)", at: item.location))
                }
                objects.append(validate(item, fields: fields))
            }
            return .success(.objectList(objects))
        case .map(let valueType):
            guard case .mapping(let pairs) = node.value else { return fail("\(name) must be a mapping, not \(node.kindDescription)") }
            var entries: [ConfigValue.MapEntry] = []
            for (key, value) in pairs {
                guard case .scalar(let entryName) = key.value else { continue }
                if case .null = value.value {
                    errors.append(ConfigError("\(ConfigWording.name(value.path)) needs a value", at: key.location))
                    continue
                }
                if let typed = decode(value, as: valueType, fallback: nil) {
                    entries.append(.init(name: entryName, value: typed, location: value.location))
                }
            }
            return .success(.map(entries))
        }
    }

    static func bool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": true
        case "false", "no", "off", "0": false
        default: nil
        }
    }

    private static func zeroValue(of type: ConfigFieldType, node: ConfigNode) -> ConfigValue {
        switch type {
        case .string, .storeName: .string("")
        case .int(let range): .int(range?.lowerBound ?? 0)
        case .bool: .bool(false)
        case .duration(let range): .duration(range?.lowerBound ?? .seconds(1))
        case .enumeration(let allowed): .string(allowed.first ?? "")
        case .stringList: .stringList([])
        case .stringMap: .stringMap([])
        case .object: .object(ParsedConfig(path: node.path, location: node.location, node: node, entries: [:]))
        case .objectList: .objectList([])
        case .map: .map([])
        }
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private static func lastComponent(_ path: String) -> String {
        String(path.split(separator: ".").last ?? Substring(path))
    }
}
