import Foundation

/// Every registered component described from its spec: the listing of `signet
/// components`, its `--json` form, the reference tables of docs/pipelines.md and
/// Schemas/pipeline.schema.json all come from here, so none of them is written by hand.
///
/// The `--json` structure (version 1) is stable for tools:
///
/// ```json
/// { "version": 1,
///   "sources": [COMPONENT], "stages": [...], "sinks": [...], "stores": [...], "sections": [...],
///   "dead_letter_fields": [FIELD], "top_level": [KEY] }
/// KEY:       { "name", "holds", "required": bool, "summary", "example": yaml } (PipelineFileSpec)
/// COMPONENT: { "name", "summary", "description", "fields": [FIELD], "examples": [yaml],
///              "requires_before": [stage], "test_substitute": store|null, "accepts_any_keys": bool }
/// FIELD:     { "name", "type": string|int|bool|duration|enum|string_list|string_map|object|
///              object_list|map|store_name, "required": bool, "default": yaml|null,
///              "description", "example": yaml|null, "advanced": bool,
///              "minimum"/"maximum" (int: numbers, duration: "100ms"-style strings),
///              "values" (enum, string_list: allowed values), "fields" (object, object_list),
///              "value" (map: a FIELD-like type description without name) }
/// ```
package struct ComponentCatalog: Sendable {
    package var registry: ComponentRegistry

    package init(registry: ComponentRegistry) {
        self.registry = registry
    }

    /// The listing version of `--json`; bumped when a key changes meaning or disappears.
    package static let jsonVersion = 1

    // MARK: - Plain text

    /// What `signet components` prints: every component with its keys, types and defaults.
    package var text: String {
        var lines: [String] = []
        for (kind, specs) in registry.catalog where !specs.isEmpty {
            lines.append("\(kind.plural):")
            for spec in specs {
                lines.append("  \(spec.name) - \(spec.summary)")
                if spec.acceptsAnyKeys { lines.append("      (keys not declared)") }
                lines += Self.keyLines(spec.fields)
                if !spec.requiresBefore.isEmpty {
                    lines.append("      needs before it: \(spec.requiresBefore.joined(separator: ", "))")
                }
            }
            lines.append("")
        }
        lines.append("dead_letter: any sink type, plus:")
        lines += Self.keyLines(DeadLetterOutput.fields)
        return lines.joined(separator: "\n") + "\n"
    }

    /// What `signet components NAME` prints: every component called `name` (a source and a sink
    /// may share one), with its description, keys and examples; nil when none is.
    package func text(named name: String) -> String? {
        var lines: [String] = []
        for (kind, specs) in registry.catalog {
            for spec in specs where spec.name == name {
                lines.append("\(kind.plural): \(spec.name) - \(spec.summary)")
                if !spec.description.isEmpty { lines.append("  \(spec.description)") }
                if spec.acceptsAnyKeys { lines.append("      (keys not declared)") }
                lines += Self.keyLines(spec.fields)
                if !spec.requiresBefore.isEmpty {
                    lines.append("      needs before it: \(spec.requiresBefore.joined(separator: ", "))")
                }
                for example in spec.examples {
                    lines.append("  example:")
                    lines += example.split(separator: "\n", omittingEmptySubsequences: false).map { "    \($0)" }
                }
                lines.append("")
            }
        }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }

    /// Every component's name, for a "did you mean".
    package var names: [String] { registry.catalog.flatMap { $0.specs.map(\.name) } }

    /// `      key   type, default: x` with the types aligned.
    static func keyLines(_ fields: [ConfigField]) -> [String] {
        let rows = rows(fields)
        let width = rows.map(\.key.count).max() ?? 0
        return rows.map { row in
            let key = row.key.padding(toLength: width, withPad: " ", startingAt: 0)
            return "      \(key)  \(row.type)\(row.requirement.isEmpty ? "" : ", \(row.requirement)")"
        }
    }

    /// One line per key, nested keys flattened (`policy.grace_period_entitled`, `routes[].sinks`).
    static func rows(_ fields: [ConfigField], prefix: String = "") -> [(key: String, type: String, requirement: String, field: ConfigField)] {
        var rows: [(key: String, type: String, requirement: String, field: ConfigField)] = []
        for field in fields.filter({ !$0.advanced }) + fields.filter(\.advanced) {
            let key = prefix + field.name
            let requirement: String =
                switch field.requirement {
                case .required: "required"
                case .optional: ""
                case .default(let value): "default: \(value.isEmpty ? "\"\"" : value)"
                }
            rows.append((key, field.type.displayName, requirement, field))
            switch field.type {
            case .object(let nested): rows += Self.rows(nested, prefix: key + ".")
            case .objectList(let nested): rows += Self.rows(nested, prefix: key + "[].")
            default: break
            }
        }
        return rows
    }

    // MARK: - JSON

    /// `signet components --json`.
    package var json: JSONValue {
        var document: [String: JSONValue] = ["version": .int(Self.jsonVersion)]
        for (kind, specs) in registry.catalog {
            document[kind.plural] = .array(specs.map(Self.json(spec:)))
        }
        document["dead_letter_fields"] = .array(DeadLetterOutput.fields.map(Self.json(field:)))
        document["top_level"] = .array(PipelineFileSpec.pipeline.keys.map { key in
            [
                "name": .string(key.name), "holds": .string(Self.holds(key.shape)), "required": .bool(key.isRequired),
                "summary": .string(key.summary), "example": .string(key.example),
            ]
        })
        return .object(document)
    }

    static func json(spec: ComponentSpec) -> JSONValue {
        [
            "name": .string(spec.name),
            "summary": .string(spec.summary),
            "description": .string(spec.description),
            "fields": .array(spec.fields.map(json(field:))),
            "examples": .array(spec.examples.map(JSONValue.string)),
            "requires_before": .array(spec.requiresBefore.map(JSONValue.string)),
            "test_substitute": spec.testSubstitute.map(JSONValue.string) ?? .null,
            "accepts_any_keys": .bool(spec.acceptsAnyKeys),
        ]
    }

    static func json(field: ConfigField) -> JSONValue {
        guard case .object(var members) = json(type: field.type) else { return .null }
        members["name"] = .string(field.name)
        members["required"] = .bool(field.isRequired)
        members["default"] = field.defaultValue.map(JSONValue.string) ?? .null
        members["description"] = .string(field.description)
        members["example"] = field.example.map(JSONValue.string) ?? .null
        members["advanced"] = .bool(field.advanced)
        return .object(members)
    }

    static func json(type: ConfigFieldType) -> JSONValue {
        var members: [String: JSONValue] = ["type": .string(type.kindName)]
        switch type {
        case .int(let range?):
            members["minimum"] = .int(range.lowerBound)
            members["maximum"] = .int(range.upperBound)
        case .duration(let range?):
            members["minimum"] = .string(ConfigDuration.format(range.lowerBound))
            members["maximum"] = .string(ConfigDuration.format(range.upperBound))
        case .enumeration(let values), .stringList(let values?):
            members["values"] = .array(values.map(JSONValue.string))
        case .object(let fields), .objectList(let fields):
            members["fields"] = .array(fields.map(json(field:)))
        case .map(let value):
            members["value"] = json(type: value)
        default:
            break
        }
        return .object(members)
    }
}
