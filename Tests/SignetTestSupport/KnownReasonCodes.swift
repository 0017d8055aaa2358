import Foundation

/// The reason codes Signet declares (Sources/SignetCore/ReasonCode.swift) and documents
/// (docs/reason-codes.md): the contract dead-letter consumers match on, so a rejection with
/// any other code is a bug.
public enum KnownReasonCodes {
    /// Every declared or documented code.
    public static let all: Set<String> = {
        var codes: Set<String> = []
        // `public static let name: ReasonCode = "code"` in the source.
        for line in text("Sources/SignetCore/ReasonCode.swift") {
            guard let range = line.range(of: #"ReasonCode = ""#) else { continue }
            codes.insert(String(line[range.upperBound...].prefix { $0 != "\"" }))
        }
        // The first column of the document's tables: | `code` | ...
        for line in text("docs/reason-codes.md") where line.hasPrefix("| `") {
            codes.insert(String(line.dropFirst(3).prefix { $0 != "`" }))
        }
        return codes
    }()

    private static func text(_ path: String) -> [Substring] {
        let url = FixturePaths.packageRoot.appendingPathComponent(path)
        return ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n")
    }
}
