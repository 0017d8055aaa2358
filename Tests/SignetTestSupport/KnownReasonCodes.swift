import Foundation

/// The reason codes Signet declares (each module's `ReasonCode` extension under Sources) and
/// documents (docs/reason-codes.md): the contract dead-letter consumers match on, so a rejection
/// with any other code is a bug.
public enum KnownReasonCodes {
    /// Every declared or documented code.
    public static let all: Set<String> = declared.union(documented)

    /// The codes declared in the sources: `static let name: ReasonCode = "code"`, in any module.
    public static let declared: Set<String> = {
        var codes: Set<String> = []
        let sources = FixturePaths.packageRoot.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            for line in text(url) {
                guard let range = line.range(of: #": ReasonCode = ""#) else { continue }
                codes.insert(String(line[range.upperBound...].prefix { $0 != "\"" }))
            }
        }
        return codes
    }()

    /// The first column of docs/reason-codes.md's tables: | `code` | ...
    public static let documented: Set<String> = Set(
        text(FixturePaths.packageRoot.appendingPathComponent("docs/reason-codes.md"))
            .filter { $0.hasPrefix("| `") }
            .map { String($0.dropFirst(3).prefix { $0 != "`" }) })

    private static func text(_ url: URL) -> [Substring] {
        ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n")
    }
}
