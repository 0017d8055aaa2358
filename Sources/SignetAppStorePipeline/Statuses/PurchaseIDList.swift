import Foundation
import SignetCore

/// The ids a reconcile asks about, as a file lists them: one per line, surrounding blanks
/// trimmed, blank lines and `#` comments skipped, repeats dropped (the first one counts).
package enum PurchaseIDList {
    /// The ids of `text`, in order.
    public static func parse(_ text: String) -> [String] {
        var seen: Set<String> = []
        var ids: [String] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let id = line.trimmingCharacters(in: .whitespaces)
            guard !id.isEmpty, !id.hasPrefix("#"), seen.insert(id).inserted else { continue }
            ids.append(id)
        }
        return ids
    }

    /// `explicit` then the ids of the file at `path` (if any), repeats dropped. Blocking.
    public static func read(explicit: [String], file path: String?) throws -> [String] {
        var text = explicit.joined(separator: "\n")
        if let path {
            do {
                text += "\n" + (try String(contentsOfFile: path, encoding: .utf8))
            } catch {
                throw SourceError("cannot read the id list '\(path)': \(error.localizedDescription)")
            }
        }
        return parse(text)
    }
}
