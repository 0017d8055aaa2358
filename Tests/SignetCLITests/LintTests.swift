import Foundation
import SignetTestSupport
import Testing

/// `signet lint`: the shipped pipelines pass; broken ones are reported as FILE:LINE:COLUMN: error:.
@Suite("signet lint", .timeLimit(.minutes(10)))
struct LintTests {
    static let pipelinesDirectory = FixturePaths.packageRoot.appendingPathComponent("Pipelines")

    static var shippedPipelines: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: pipelinesDirectory.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
            .map { pipelinesDirectory.appendingPathComponent($0).path }
    }

    /// `${NAME}` without a default in a file's text.
    static func variablesWithoutDefault(in text: String) -> Set<String> {
        var names: Set<String> = []
        for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("#") {
            var rest = Substring(line)
            while let start = rest.range(of: "${") {
                let after = rest[start.upperBound...]
                guard let close = after.firstIndex(of: "}") else { break }
                let body = after[..<close]
                if !body.contains(":") { names.insert(String(body)) }
                rest = after[after.index(after: close)...]
            }
        }
        return names
    }

    @Test func pipelinesFolderIsNotEmpty() {
        #expect(Self.shippedPipelines.contains { $0.hasSuffix("/stdin.yaml") }, "\(Self.shippedPipelines)")
    }

    /// Every shipped pipeline lints clean where no SIGNET_* variable is set; the unset ones are warnings
    /// naming the variable.
    @Test(.ownThread, arguments: shippedPipelines)
    func shippedPipelineLintsWithoutEnvironment(_ file: String) throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-lint")
        defer { dir.remove() }
        let result = try CLI.run(["lint", file], currentDirectory: dir.url)
        #expect(result.exitCode == 0, CLI.describe(result))
        #expect(result.stdoutText.contains("\(file): ok"), CLI.describe(result))
        #expect(!result.stdoutText.contains(": error:"), CLI.describe(result))
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let warnings = result.lines.filter { $0.contains(": warning:") }
        for name in Self.variablesWithoutDefault(in: text) {
            #expect(warnings.contains { $0.contains(name) && $0.hasPrefix(file + ":") }, "no warning names \(name): \(result.stdoutText)")
        }
    }

    /// Commented-out stages a shipped pipeline offers (`# - type: ...` and its indented keys)
    /// lint clean once uncommented: the webhook's refund-question responder (issue 53).
    @Test(.ownThread) func commentedStagesLintOnceUncommented() throws {
        let file = Self.pipelinesDirectory.appendingPathComponent("webhook.yaml").path
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text.contains("# - type: appstore_consumption"))
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var inside = false
        for index in lines.indices {
            if lines[index].hasPrefix("  # - type: ") { inside = true } else if !lines[index].hasPrefix("  #   ") { inside = false }
            if inside { lines[index] = lines[index].replacingOccurrences(of: "  # ", with: "  ", options: .anchored) }
        }
        let dir = try TemporaryDirectory(prefix: "signet-cli-lint")
        defer { dir.remove() }
        let uncommented = try dir.write("webhook-consumption.yaml", lines.joined(separator: "\n"))
        #expect(uncommented.isEmpty == false)
        let result = try CLI.run(["lint", uncommented], currentDirectory: dir.url)
        #expect(result.exitCode == 0 && !result.stdoutText.contains(": error:"), CLI.describe(result))
        #expect(try String(contentsOfFile: uncommented, encoding: .utf8).contains("\n  - type: appstore_consumption\n"))
    }

    /// The unset-variable warning itself, on the default pipeline: it names SIGNET_BUNDLE_ID with its position.
    @Test(.ownThread) func defaultPipelineWarnsAboutBundleId() throws {
        let file = Self.pipelinesDirectory.appendingPathComponent("stdin.yaml").path
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let line = try #require(lines.firstIndex { $0.contains("${SIGNET_BUNDLE_ID}") && !$0.hasPrefix("#") }) + 1
        let result = try CLI.run(["lint", file])
        let warning = result.lines.first { $0.contains(": warning:") && $0.contains("SIGNET_BUNDLE_ID") }
        #expect(warning?.hasPrefix("\(file):\(line):") == true, CLI.describe(result))
        // With the deployment's variables set the file is clean.
        let clean = try CLI.run(
            ["lint", file],
            environment: ["SIGNET_BUNDLE_ID": "com.example.signet", "SIGNET_ENVIRONMENT": "Sandbox"])
        #expect(clean.exitCode == 0, CLI.describe(clean))
        #expect(!clean.stdoutText.contains("warning"), CLI.describe(clean))
    }

    /// Production without an app id: the error must point the user at the setting to fill in.
    ///
    /// Regression: the message once leaked a Swift enum case and pointed at `environment`.
    @Test(.ownThread) func productionWithoutAppAppleIdNamesTheSetting() throws {
        let file = Self.pipelinesDirectory.appendingPathComponent("stdin.yaml").path
        let result = try CLI.run(["lint", file], environment: ["SIGNET_ENVIRONMENT": "Production", "SIGNET_BUNDLE_ID": "com.example.signet"])
        #expect(result.exitCode == 1, CLI.describe(result))
        let errors = result.lines.filter { $0.hasPrefix(file + ":") && $0.contains(": error:") }
        #expect(errors.count == 1, CLI.describe(result))
        #expect(errors.contains { $0.contains("app_apple_id") }, "the error names the key to set: \(result.stdoutText)")
        #expect(!errors.contains { $0.contains("missingAppAppleId") }, "no Swift identifiers in messages: \(result.stdoutText)")
        let withId = try CLI.run(
            ["lint", file],
            environment: ["SIGNET_ENVIRONMENT": "Production", "SIGNET_BUNDLE_ID": "com.example.signet", "SIGNET_APP_APPLE_ID": "1234567890"])
        #expect(withId.exitCode == 0, CLI.describe(withId))
    }

    // MARK: - Broken pipelines

    static let valid = """
        source:
          type: stdin
        stages:
          - type: decode
          - type: verify
            roots: apple
            environment: Sandbox
            bundle_id: com.example.signet
        sinks:
          out:
            type: stdout
        dead_letter:
          type: file
          path: dead-letter.ndjson
        """

    struct Broken: CustomStringConvertible, Sendable {
        let name: String
        let yaml: String
        /// (line, column or nil for any, text the message must contain)
        let errors: [(Int, Int?, String)]
        var strictEnv = false
        var description: String { name }
    }

    static func replacing(_ old: String, with new: String) -> String {
        precondition(valid.contains(old))
        return valid.replacingOccurrences(of: old, with: new)
    }

    static let broken: [Broken] = [
        Broken(name: "unknown stage type", yaml: replacing("  - type: decode", with: "  - type: decod"),
               errors: [(4, 11, "decod")]),
        Broken(name: "unknown source type", yaml: replacing("  type: stdin", with: "  type: stdinn"),
               errors: [(2, 9, "stdinn")]),
        Broken(name: "unknown key", yaml: replacing("    bundle_id: com.example.signet", with: "    bundle_id: com.example.signet\n    bundle_idd: x"),
               errors: [(9, 5, "bundle_idd")]),
        Broken(name: "unknown top-level key", yaml: valid + "\nsettingz:\n  batch_size: 5", errors: [(15, 1, "settingz")]),
        Broken(name: "wrong type (integer)", yaml: replacing("  type: stdin", with: "  type: stdin\n  max_line_bytes: lots"),
               errors: [(3, 19, "max_line_bytes")]),
        Broken(name: "wrong type (list expected)", yaml: replacing(
            "stages:\n  - type: decode\n  - type: verify\n    roots: apple\n    environment: Sandbox\n    bundle_id: com.example.signet",
            with: "stages:\n  type: decode"), errors: [(4, nil, "stages")]),
        Broken(name: "bad environment value", yaml: replacing("environment: Sandbox", with: "environment: Sandbx"),
               errors: [(7, 18, "Sandbx")]),
        Broken(name: "bad YAML indentation", yaml: replacing("    environment: Sandbox", with: "      environment: Sandbox"),
               errors: [(7, nil, "YAML")]),
        Broken(name: "tab indentation", yaml: replacing("    type: stdout", with: "\ttype: stdout"),
               errors: [(11, nil, "YAML")]),
        Broken(name: "two errors in one file", yaml: replacing("  - type: decode", with: "  - type: decod")
            .replacingOccurrences(of: "    type: stdout", with: "    type: stdot"),
               errors: [(4, 11, "decod"), (11, 11, "stdot")]),
        Broken(name: "undefined variable with --strict-env",
               yaml: replacing("bundle_id: com.example.signet", with: "bundle_id: ${SIGNET_TEST_UNDEFINED_VARIABLE}"),
               errors: [(8, 16, "SIGNET_TEST_UNDEFINED_VARIABLE")], strictEnv: true),
        Broken(name: "App Store API rate above Sandbox's limit (the environment's default)",
               yaml: replacing("stages:\n  - type: decode", with: "stages:\n  - type: appstore_catch_up\n    requests_per_second: 10\n  - type: decode"),
               errors: [(5, nil, "above Apple's limit of 5 requests per second per app in Sandbox")]),
        Broken(name: "App Store API rate above Production's limit",
               yaml: replacing("stages:\n  - type: decode", with: "stages:\n  - type: appstore_catch_up\n    environment: Production\n    requests_per_second: 60\n  - type: decode"),
               errors: [(6, nil, "requests_per_second")]),
        Broken(name: "missing dead_letter", yaml: replacing("dead_letter:\n  type: file\n  path: dead-letter.ndjson", with: ""),
               errors: [(1, nil, "dead_letter")]),
    ]

    @Test(.ownThread, arguments: broken)
    func brokenPipelineIsReportedWithPositions(_ broken: Broken) throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-lint")
        defer { dir.remove() }
        let file = try CLI.write(Data(broken.yaml.utf8), to: dir, name: "broken.yaml")
        let result = try CLI.run(["lint"] + (broken.strictEnv ? ["--strict-env"] : []) + [file])
        #expect(result.exitCode == 1, "\(broken.name): \(CLI.describe(result))")
        let errorLines = result.lines.filter { $0.contains(": error:") }
        for line in errorLines {
            // FILE:LINE:COLUMN: error: MESSAGE
            let rest = line.dropFirst(file.count)
            let fields = rest.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            #expect(line.hasPrefix(file + ":") && fields.count == 4 && Int(fields[1]) != nil && Int(fields[2]) != nil
                    && fields[3].hasPrefix(" error"), "\(broken.name): not FILE:LINE:COLUMN: error: \(line)")
        }
        #expect(errorLines.count == broken.errors.count, "\(broken.name): \(result.stdoutText)")
        for (line, column, text) in broken.errors {
            let prefix = column.map { "\(file):\(line):\($0): error:" } ?? "\(file):\(line):"
            #expect(errorLines.contains { $0.hasPrefix(prefix) && $0.contains(text) },
                    "\(broken.name): expected \(prefix) ... \(text); got \(result.stdoutText)")
        }
        #expect(!result.stdoutText.contains("\(file): ok"))
    }

    /// Without --strict-env the same undefined variable is only a warning.
    @Test(.ownThread) func undefinedVariableIsAWarningWithoutStrictEnv() throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-lint")
        defer { dir.remove() }
        let yaml = Self.replacing("bundle_id: com.example.signet", with: "bundle_id: ${SIGNET_TEST_UNDEFINED_VARIABLE}")
        let file = try CLI.write(Data(yaml.utf8), to: dir, name: "vars.yaml")
        let result = try CLI.run(["lint", file])
        #expect(result.exitCode == 0, CLI.describe(result))
        #expect(result.lines.contains { $0.hasPrefix("\(file):8:16: warning:") && $0.contains("SIGNET_TEST_UNDEFINED_VARIABLE") },
                CLI.describe(result))
        #expect(result.stdoutText.contains("\(file): ok"))
        let set = try CLI.run(["lint", "--strict-env", file], environment: ["SIGNET_TEST_UNDEFINED_VARIABLE": "com.example.signet"])
        #expect(set.exitCode == 0, CLI.describe(set))
    }

    @Test(.ownThread) func everyFileIsCheckedAndOneFailureFailsTheRun() throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-lint")
        defer { dir.remove() }
        let good = try CLI.write(Data(Self.valid.utf8), to: dir, name: "good.yaml")
        let bad = try CLI.write(Data(Self.replacing("  - type: decode", with: "  - type: decod").utf8), to: dir, name: "bad.yaml")
        let missing = dir.path("missing.yaml")
        let result = try CLI.run(["lint", bad, good, missing])
        #expect(result.exitCode == 1, CLI.describe(result))
        #expect(result.stdoutText.contains("\(good): ok"))
        #expect(result.stdoutText.contains("\(bad):4:11: error:"))
        #expect(result.stdoutText.contains("\(missing)"), "the unreadable file is reported")
        let onlyGood = try CLI.run(["lint", good])
        #expect(onlyGood.exitCode == 0, CLI.describe(onlyGood))
        let none = try CLI.run(["lint"])
        #expect(none.exitCode == 2, CLI.describe(none))
    }
}
