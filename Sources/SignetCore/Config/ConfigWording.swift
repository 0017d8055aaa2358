/// How configuration errors name things, in one place: a path, a value, and the "did you
/// mean" suggestion for a misspelt key or value.
package enum ConfigWording {
    /// `'stages[2].roots'`, or "the document" for the top level.
    package static func name(_ path: String) -> String { path.isEmpty ? "the document" : "'\(path)'" }

    /// A scalar quoted as written, anything else by its kind.
    package static func show(_ node: ConfigNode) -> String {
        if case .scalar(let text) = node.value { return "'\(text)'" }
        return node.kindDescription
    }

    /// " (did you mean 'x'?)" when a known word is within a small edit distance.
    package static func suggestion(for word: String, among candidates: [String]) -> String {
        let limit = min(max(2, word.count / 3), word.count - 1)
        var best: (word: String, distance: Int)?
        // The closest; of equally close ones the first in alphabetical order, so the advice
        // does not depend on the order the candidates came in.
        for candidate in candidates {
            let distance = editDistance(word, candidate)
            guard distance <= limit else { continue }
            if let current = best, current.distance < distance || (current.distance == distance && current.word <= candidate) { continue }
            best = (candidate, distance)
        }
        return best.map { " (did you mean '\($0.word)'?)" } ?? ""
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
