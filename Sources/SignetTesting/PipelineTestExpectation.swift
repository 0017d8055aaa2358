import Foundation
import SignetCore

/// What one test case expects: the messages each sink receives, the dead letters, the
/// drops, and (unless `allowsMore`) nothing else.
public struct PipelineTestExpectation: Sendable {
    /// A message some sink must receive, matched in order per sink.
    public struct Output: Sendable {
        /// The sink's name; nil when the pipeline has exactly one sink.
        public var sink: String?
        /// Dotted paths into the JSON value and the value each must have, as written
        /// (`type: granted`, `entitled: true`, `notification.subtype: INITIAL_BUY`).
        public var fields: [(path: String, value: String)]
        /// The whole value, exactly (for messages that are not JSON).
        public var value: String?
    }

    /// A record that must be rejected, matched in order.
    public struct DeadLetter: Sendable {
        public var reason: String
        public var stage: String?
        public var detailContains: String?
    }

    public var outputs: [Output] = []
    public var deadLetters: [DeadLetter] = []
    /// Drops by reason (e.g. `duplicate: 1`), compared exactly when given.
    public var dropped: [String: Int]?
    /// Messages per sink, compared exactly when given (for large inputs).
    public var counts: [String: Int]?
    /// Whether messages and dead letters beyond the listed ones are allowed.
    public var allowsMore = false

    public init() {}
}

extension PipelineTestExpectation.Output {
    /// Why `message` does not match, or nil when it does.
    func mismatch(_ message: OutputMessage) -> String? {
        if let value, value != String(decoding: message.value, as: UTF8.self) {
            return "value: expected \(Self.quote(value)), got \(Self.quote(String(decoding: message.value, as: UTF8.self)))"
        }
        guard !fields.isEmpty else { return nil }
        guard let object = try? JSONSerialization.jsonObject(with: Data(message.value), options: [.fragmentsAllowed]) else {
            return "the message is not JSON: \(String(decoding: message.value.prefix(200), as: UTF8.self))"
        }
        var problems: [String] = []
        for (path, expected) in fields {
            guard let actual = Self.lookup(path, in: object) else {
                problems.append("\(path): expected \(Self.quote(expected)), but it is absent")
                continue
            }
            let text = Self.text(of: actual)
            if text != expected { problems.append("\(path): expected \(Self.quote(expected)), got \(Self.quote(text))") }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    /// The expectation as written, for messages.
    var summary: String {
        if let value { return Self.quote(value) }
        return "{" + fields.map { "\($0.path): \($0.value)" }.joined(separator: ", ") + "}"
    }

    private static func lookup(_ path: String, in object: Any) -> Any? {
        var current: Any? = object
        for part in path.split(separator: ".") {
            guard let dictionary = current as? [String: Any] else { return nil }
            current = dictionary[String(part)]
        }
        return current
    }

    /// A JSON value as YAML would write it: strings bare, everything else as JSON text.
    private static func text(of value: Any) -> String {
        if let string = value as? String { return string }
        if value is NSNull { return "null" }
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]) else {
            return "\(value)"
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func quote(_ text: String) -> String { "\"\(text.count > 200 ? text.prefix(200) + "..." : Substring(text))\"" }
}

extension PipelineTestExpectation.DeadLetter {
    /// Why the dead letter `message` does not match, or nil.
    func mismatch(_ message: OutputMessage) -> String? {
        let facts = Self.facts(message)
        var problems: [String] = []
        if facts.reason != reason { problems.append("reason: expected \(reason), got \(facts.reason)") }
        if let stage, facts.stage != stage { problems.append("stage: expected \(stage), got \(facts.stage)") }
        if let detailContains, !facts.detail.contains(detailContains) {
            problems.append("detail: expected it to contain \"\(detailContains)\", got \"\(facts.detail)\"")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    /// Reason, stage and detail from the dead letter's headers (both formats carry them).
    static func facts(_ message: OutputMessage) -> (reason: String, stage: String, detail: String) {
        (message.header(.reason) ?? "", message.header(.stage) ?? "", message.header(.detail) ?? "")
    }
}
