/// Plain-words advice for the YAML mistakes people make in pipeline files, added to the
/// parser's own message (which names the grammar rule, not the mistake).
enum YAMLSyntaxHint {
    /// A hint for an error reported at `line` (1-based), looking at that line and the
    /// line the parser's context points at; nil when nothing familiar is there.
    static func hint(text: String, line: Int, contextLine: Int?) -> String? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let candidates = [line, contextLine, line - 1].compactMap { $0 }.filter { $0 >= 1 && $0 <= lines.count }
        for number in candidates {
            let content = lines[number - 1]
            if content.prefix(while: { $0 == " " || $0 == "\t" }).contains("\t") {
                return "line \(number) is indented with a tab; YAML indentation must be spaces"
            }
        }
        for number in candidates where hasUnquotedReferenceInFlow(lines[number - 1]) {
            return "inside { } or [ ], a value that uses ${...} must be quoted, e.g. key: \"${VAR}\" (line \(number))"
        }
        return nil
    }

    /// Whether `line` has a `${` outside quotes after an opening `{` or `[`.
    private static func hasUnquotedReferenceInFlow(_ line: Substring) -> Bool {
        var depth = 0
        var quote: Character?
        var previous: Character = " "
        for character in line {
            defer { previous = character }
            if let open = quote {
                if character == open { quote = nil }
                continue
            }
            switch character {
            case "\"", "'": quote = character
            case "#" where previous == " ": return false  // a comment
            case "{" where previous == "$": if depth > 0 { return true }
            case "{", "[": depth += 1
            case "}", "]": depth = max(0, depth - 1)
            default: break
            }
        }
        return false
    }
}
