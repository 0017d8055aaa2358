import Foundation

/// The variables `signet fixtures --out FOLDER` writes to FOLDER/fixtures.env (`export NAME=VALUE`
/// lines: the test root, environment and bundle id), as an environment for `signet` children.
public enum FixturesEnvironment {
    /// The variables of `folder`/fixtures.env.
    public static func read(_ folder: String) throws -> [String: String] {
        var environment: [String: String] = [:]
        let text = try String(contentsOfFile: folder + "/fixtures.env", encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix("export ") {
            let pair = line.dropFirst("export ".count).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { environment[String(pair[0])] = String(pair[1]) }
        }
        return environment
    }
}
