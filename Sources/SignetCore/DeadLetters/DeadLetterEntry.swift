import Foundation

/// One record of a `json` dead-letter file read back (what ``DeadLetterOutput`` wrote):
/// why the input was refused, where it came from, and the input itself when it was kept
/// whole, for `signet dead-letters stats` and `replay`.
package struct DeadLetterEntry: Sendable, Equatable {
    /// The line of the dead-letter file it was read from (1-based).
    package var line: Int
    /// Stable over re-runs of the same input refused for the same reason.
    package var id: String
    package var reason: String
    package var detail: String
    package var stage: String
    /// When it was refused (ISO 8601, as written).
    package var rejectedAt: String
    /// The input's bytes, nil when they were cut (`truncated`: they cannot be replayed).
    package var input: [UInt8]?
    /// The original input's length.
    package var inputBytes: Int

    /// A line that is not a dead-letter record.
    package struct Unreadable: Error, Sendable, Equatable, CustomStringConvertible {
        package var line: Int
        package var reason: String
        package var description: String { "line \(line): \(reason)" }
    }

    /// Reads one line of a dead-letter file.
    package init(line number: Int, text: Substring) throws(Unreadable) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            throw Unreadable(line: number, reason: "not a JSON object")
        }
        guard let reason = object["reason"] as? String, let id = object["id"] as? String else {
            throw Unreadable(
                line: number, reason: "not a dead-letter record (no 'reason' and 'id'; the json dead-letter format is needed)")
        }
        line = number
        self.id = id
        self.reason = reason
        detail = object["detail"] as? String ?? ""
        stage = object["stage"] as? String ?? ""
        rejectedAt = object["rejectedAt"] as? String ?? ""
        let truncated = object["truncated"] as? Bool ?? false
        if truncated {
            input = nil
        } else if let text = object["input"] as? String {
            input = Array(text.utf8)
        } else if let base64 = object["inputBase64"] as? String, let bytes = Data(base64Encoded: base64) {
            input = Array(bytes)
        } else {
            input = nil
        }
        inputBytes = (object["inputBytes"] as? Int) ?? input?.count ?? 0
    }

    /// Every record of a dead-letter file, and the lines that are not records (blank lines skipped).
    package static func read(contentsOf text: String) -> (entries: [DeadLetterEntry], unreadable: [Unreadable]) {
        var entries: [DeadLetterEntry] = []
        var unreadable: [Unreadable] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.allSatisfy(\.isWhitespace) {
            do {
                entries.append(try DeadLetterEntry(line: index + 1, text: line))
            } catch {
                unreadable.append(error)
            }
        }
        return (entries, unreadable)
    }
}
