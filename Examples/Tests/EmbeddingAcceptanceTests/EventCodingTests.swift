// (3) EntitlementEvent is Codable to exactly the published document,
// Schemas/entitlement-event.schema.json: checked against the schema file itself.
import Foundation
import SignetState
import Testing

@Suite("EntitlementEvent and the published JSON document")
struct EventCodingTests {
    /// The schema, read from this checkout (Examples/Tests/EmbeddingAcceptanceTests → the repository root).
    static func schema() throws -> JSON {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Schemas/entitlement-event.schema.json"), encoding: .utf8)
        return try JSON.parse(text)
    }

    /// Events of the fixtures, with the bytes a plain sink received for each.
    static func sampleEvents() async throws -> [(bytes: [UInt8], event: EntitlementEvent)] {
        try await withTemporaryDirectory { directory in
            let result = try await runPipeline(
                lines: Fixtures.shared.notifications,
                stages: StatePipeline.stages(verifier: fixtureVerifier(in: directory), store: InMemoryStateStore()), in: directory)
            #expect(result.messages.count == result.events.count)
            return zip(result.messages, result.events).map { ($0.value, $1) }
        }
    }

    @Test("every published event is valid against the schema: every property present (nulls included), in the schema's order")
    func publishedEventsMatchTheSchema() async throws {
        let schema = try Self.schema()
        let properties = try #require(schema["properties"]?.objectMembers).map(\.key)
        let required = try #require(schema["required"]?.arrayValue).compactMap(\.stringValue)
        #expect(properties == required, "the schema's properties and required lists differ")
        #expect(properties.count == 32)
        let samples = try await Self.sampleEvents()
        #expect(samples.count >= 20)
        var nullsSeen: Set<String> = []
        for (bytes, _) in samples {
            let document = try JSON.parse(String(decoding: bytes, as: UTF8.self))
            let keys = try #require(document.objectMembers).map(\.key)
            #expect(keys == properties, "published keys differ from the schema's, or are in another order: \(keys)")
            let problems = document.violations(of: schema)
            #expect(problems.isEmpty, "\(problems)")
            for (key, value) in document.objectMembers ?? [] where value == .null { nullsSeen.insert(key) }
        }
        #expect(!nullsSeen.isEmpty, "no published event carried a null: the nulls-included rule was not exercised")
    }

    @Test("JSONEncoder writes every field of the schema, nulls included, and the same document as published; JSONDecoder reads it back")
    func jsonEncoderWritesTheWholeDocument() async throws {
        let schema = try Self.schema()
        let properties = Set(try #require(schema["properties"]?.objectMembers).map(\.key))
        for (bytes, event) in try await Self.sampleEvents() {
            let encoded = try JSONEncoder().encode(event)
            let document = try JSON.parse(String(decoding: encoded, as: UTF8.self))
            let members = try #require(document.objectMembers)
            #expect(Set(members.map(\.key)) == properties)
            #expect(members.count == properties.count, "a key repeated")
            #expect(document.violations(of: schema).isEmpty, "\(document.violations(of: schema))")
            // Spot checks of nil properties written as null.
            if event.transactionId == nil { #expect(document["transactionId"] == .null) }
            if event.appAccountToken == nil { #expect(document["appAccountToken"] == .null) }
            if event.revocationDate == nil { #expect(document["revocationDate"] == .null) }
            if event.previousState == nil { #expect(document["previousState"] == .null) }
            if let token = event.appAccountToken { #expect(document["appAccountToken"] == .string(token.description)) }
            #expect(document["schemaVersion"] == .number("1"))
            #expect(document["eventId"] == .string(event.eventId))
            // The same document as the published bytes (as JSON values; spacing and escaping aside).
            #expect(document.unordered == (try JSON.parse(String(decoding: bytes, as: UTF8.self))).unordered)
            #expect(try JSONDecoder().decode(EntitlementEvent.self, from: encoded) == event)
        }
    }

    @Test("a document with extra unknown fields still decodes, to the same event")
    func unknownFieldsAreIgnored() async throws {
        let samples = try await Self.sampleEvents()
        for (bytes, event) in samples.prefix(10) {
            guard case .object(let members) = try JSON.parse(String(decoding: bytes, as: UTF8.self)) else {
                Issue.record("not an object")
                continue
            }
            let extended = JSON.object(
                [("addedInAFutureVersion", .object([("nested", .array([.number("1"), .null]))]))] + members
                    + [("zz_unknown", .string("x")), ("anotherNull", .null)])
            let text = extended.serialized
            #expect(try JSONDecoder().decode(EntitlementEvent.self, from: Data(text.utf8)) == event)
            #expect(try EntitlementEvent(json: Array(text.utf8)) == event)
        }
    }

    @Test("a document with another schemaVersion is refused")
    func wrongSchemaVersionIsRefused() async throws {
        let (bytes, event) = try #require(try await Self.sampleEvents().first)
        guard case .object(let members) = try JSON.parse(String(decoding: bytes, as: UTF8.self)) else {
            Issue.record("not an object")
            return
        }
        // The unchanged document decodes: the refusals below are for the version alone.
        #expect(try JSONDecoder().decode(EntitlementEvent.self, from: Data(JSON.object(members).serialized.utf8)) == event)
        for version: JSON in [.number("2"), .number("0"), .string("1")] {
            let text = JSON.object(members.map { $0.key == "schemaVersion" ? ($0.key, version) : $0 }).serialized
            #expect(throws: (any Error).self, "schemaVersion \(version.serialized) was accepted by JSONDecoder") {
                try JSONDecoder().decode(EntitlementEvent.self, from: Data(text.utf8))
            }
            #expect(throws: (any Error).self, "schemaVersion \(version.serialized) was accepted by EntitlementEvent(json:)") {
                try EntitlementEvent(json: Array(text.utf8))
            }
        }
    }
}

// MARK: - A small JSON model that keeps member order and tells integers from booleans

indirect enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number's text as written.
    case number(String)
    case string(String)
    case array([JSON])
    case object([(key: String, value: JSON)])

    static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }
    var objectMembers: [(key: String, value: JSON)]? { if case .object(let m) = self { m } else { nil } }
    var arrayValue: [JSON]? { if case .array(let a) = self { a } else { nil } }
    var stringValue: String? { if case .string(let s) = self { s } else { nil } }

    /// The same value with every object's members sorted by key (for comparing documents).
    var unordered: JSON {
        switch self {
        case .array(let items): .array(items.map(\.unordered))
        case .object(let members): .object(members.map { ($0.key, $0.value.unordered) }.sorted { $0.0 < $1.0 }.map { (key: $0.0, value: $0.1) })
        default: self
        }
    }

    var serialized: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .number(let n): n
        case .string(let s): JSON.quote(s)
        case .array(let items): "[" + items.map(\.serialized).joined(separator: ",") + "]"
        case .object(let members): "{" + members.map { JSON.quote($0.key) + ":" + $0.value.serialized }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    struct ParseError: Error, CustomStringConvertible { var description: String }

    static func parse(_ text: String) throws -> JSON {
        var parser = Parser(scalars: Array(text.unicodeScalars))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.index == parser.scalars.count else { throw ParseError(description: "trailing characters at \(parser.index)") }
        return value
    }

    private struct Parser {
        let scalars: [Unicode.Scalar]
        var index = 0

        mutating func skipSpace() {
            while index < scalars.count, [" ", "\n", "\r", "\t"].contains(scalars[index]) { index += 1 }
        }
        mutating func expect(_ literal: String) throws {
            for scalar in literal.unicodeScalars {
                guard index < scalars.count, scalars[index] == scalar else { throw ParseError(description: "expected \(literal) at \(index)") }
                index += 1
            }
        }
        mutating func value() throws -> JSON {
            skipSpace()
            guard index < scalars.count else { throw ParseError(description: "unexpected end") }
            switch scalars[index] {
            case "n": try expect("null"); return .null
            case "t": try expect("true"); return .bool(true)
            case "f": try expect("false"); return .bool(false)
            case "\"": return .string(try string())
            case "[":
                index += 1
                var items: [JSON] = []
                skipSpace()
                if index < scalars.count, scalars[index] == "]" { index += 1; return .array(items) }
                while true {
                    items.append(try value())
                    skipSpace()
                    guard index < scalars.count else { throw ParseError(description: "unterminated array") }
                    if scalars[index] == "," { index += 1; continue }
                    try expect("]")
                    return .array(items)
                }
            case "{":
                index += 1
                var members: [(key: String, value: JSON)] = []
                skipSpace()
                if index < scalars.count, scalars[index] == "}" { index += 1; return .object(members) }
                while true {
                    skipSpace()
                    let key = try string()
                    skipSpace()
                    try expect(":")
                    members.append((key, try value()))
                    skipSpace()
                    guard index < scalars.count else { throw ParseError(description: "unterminated object") }
                    if scalars[index] == "," { index += 1; continue }
                    try expect("}")
                    return .object(members)
                }
            default:
                let start = index
                while index < scalars.count, "+-0123456789.eE".unicodeScalars.contains(scalars[index]) { index += 1 }
                guard index > start else { throw ParseError(description: "unexpected \(scalars[index]) at \(index)") }
                var text = ""
                text.unicodeScalars.append(contentsOf: scalars[start..<index])
                return .number(text)
            }
        }
        mutating func string() throws -> String {
            try expect("\"")
            var out = String.UnicodeScalarView()
            while true {
                guard index < scalars.count else { throw ParseError(description: "unterminated string") }
                let scalar = scalars[index]
                index += 1
                if scalar == "\"" { return String(out) }
                guard scalar == "\\" else { out.append(scalar); continue }
                guard index < scalars.count else { throw ParseError(description: "bad escape") }
                let escaped = scalars[index]
                index += 1
                switch escaped {
                case "\"", "\\", "/": out.append(escaped)
                case "b": out.append("\u{08}")
                case "f": out.append("\u{0C}")
                case "n": out.append("\n")
                case "r": out.append("\r")
                case "t": out.append("\t")
                case "u":
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        try expect("\\u")
                        let low = try hex4()
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let decoded = Unicode.Scalar(code) else { throw ParseError(description: "bad \\u escape") }
                    out.append(decoded)
                default: throw ParseError(description: "bad escape \\\(escaped)")
                }
            }
        }
        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= scalars.count else { throw ParseError(description: "short \\u escape") }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars[index..<index + 4])
            index += 4
            guard let value = UInt32(text, radix: 16) else { throw ParseError(description: "bad \\u escape \(text)") }
            return value
        }
    }
}

// MARK: - The parts of JSON Schema the event schema uses

extension JSON {
    /// What in `self` breaks `schema` (const, type, enum, pattern, items, uniqueItems,
    /// required, properties, additionalProperties: false).
    func violations(of schema: JSON, at path: String = "$") -> [String] {
        var problems: [String] = []
        if let constant = schema["const"], constant != self { problems.append("\(path): \(serialized) is not \(constant.serialized)") }
        if let allowed = schema["enum"]?.arrayValue, !allowed.contains(self) { problems.append("\(path): \(serialized) is not one of the enum") }
        if let type = schema["type"] {
            let types = type.arrayValue?.compactMap(\.stringValue) ?? type.stringValue.map { [$0] } ?? []
            if !types.contains(where: matches) { problems.append("\(path): \(serialized) is not of type \(types)") }
        }
        if let pattern = schema["pattern"]?.stringValue, case .string(let text) = self,
            text.range(of: pattern, options: .regularExpression) == nil
        {
            problems.append("\(path): \(text) does not match \(pattern)")
        }
        if case .array(let items) = self {
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() { problems += item.violations(of: itemSchema, at: "\(path)[\(index)]") }
            }
            if schema["uniqueItems"] == .bool(true) {
                for (index, item) in items.enumerated() where items[..<index].contains(item) { problems.append("\(path)[\(index)]: repeated") }
            }
        }
        if case .object(let members) = self {
            for key in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where self[key] == nil {
                problems.append("\(path): \(key) missing")
            }
            let properties = schema["properties"]?.objectMembers ?? []
            for (key, value) in members {
                if let propertySchema = properties.first(where: { $0.key == key })?.value {
                    problems += value.violations(of: propertySchema, at: "\(path).\(key)")
                } else if schema["additionalProperties"] == .bool(false) {
                    problems.append("\(path): \(key) is not in the schema")
                }
            }
        }
        return problems
    }

    private func matches(_ type: String) -> Bool {
        switch (type, self) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object): true
        case ("number", .number): true
        case ("integer", .number(let text)): !text.contains(where: { ".eE".contains($0) })
        default: false
        }
    }
}
