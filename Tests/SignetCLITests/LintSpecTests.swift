import Foundation
import SignetTestSupport
import Testing

/// `signet lint` on what the component specs add: stage order, stores, units,
/// misspelt required keys, and unset variables in typed keys.
@Suite("signet lint: specs, stores and order")
struct LintSpecTests {
    static let valid = """
        stores:
          default: { type: memory }
        source: { type: stdin }
        stages:
          - type: decode
          - type: verify
            environment: Sandbox
            bundle_id: com.example.signet
          - type: dedupe
          - type: transition
          - type: fanout
            default_sinks: [out]
        sinks:
          out: { type: stdout }
        dead_letter: { type: stdout }
        """

    func lint(_ yaml: String, environment: [String: String] = [:]) throws -> (result: SignetProcess.Result, file: String) {
        let dir = try TemporaryDirectory(prefix: "signet-cli-lint-spec")
        defer { dir.remove() }
        let file = try CLI.write(Data(yaml.utf8), to: dir, name: "p.yaml")
        return (try CLI.run(["lint", file], environment: environment), file)
    }

    func replacing(_ old: String, _ new: String) -> String {
        precondition(Self.valid.contains(old))
        return Self.valid.replacingOccurrences(of: old, with: new)
    }

    @Test(.ownThread) func theValidPipelineIsOk() throws {
        let (result, file) = try lint(Self.valid)
        #expect(result.exitCode == 0, "\(CLI.describe(result))")
        #expect(result.stdoutText.contains("\(file): ok (decode -> verify -> dedupe -> transition -> fanout; sinks: out; stores: default (memory))"))
    }

    @Test(.ownThread) func aStageBeforeWhatItNeedsIsAnError() throws {
        let (result, file) = try lint(replacing("  - type: dedupe\n  - type: transition\n", "").replacingOccurrences(
            of: "  - type: decode\n", with: "  - type: decode\n  - type: transition\n"))
        #expect(result.exitCode == 1)
        #expect(result.lines.contains("\(file):6:5: error: stage 'transition' must come after 'verify' (stages[2]): it uses what 'verify' adds"),
                "\(result.stdoutText)")
        let (missing, _) = try lint(replacing("  - type: transition\n", ""))
        #expect(missing.stdoutText.contains("error: stage 'fanout' needs a 'transition' stage before it"), "\(missing.stdoutText)")
    }

    @Test(.ownThread) func twoStoresOnOneDatabaseAreAnError() throws {
        let (result, file) = try lint(replacing(
            "  default: { type: memory }",
            "  default: { type: sqlite, path: data/s.sqlite }\n  copy: { type: sqlite, path: data/./s.sqlite, durability: off }"))
        #expect(result.exitCode == 1)
        #expect(result.lines.contains { $0.hasPrefix("\(file):3:9: error: stores 'default' and 'copy' both open sqlite:") }, "\(result.stdoutText)")
    }

    @Test(.ownThread) func storeKeysOnAStageSayWhereTheyMoved() throws {
        let (result, file) = try lint(replacing("  - type: dedupe\n", "  - type: dedupe\n    database: x.sqlite\n"))
        #expect(result.exitCode == 1)
        #expect(result.lines.contains { $0.hasPrefix("\(file):10:5: error: unknown key 'database' in 'stages[2]': store settings moved to the top-level 'stores:'") },
                "\(result.stdoutText)")
    }

    @Test(.ownThread) func aDurationWithoutUnitSuggestsOne() throws {
        let (result, file) = try lint(Self.valid + "\nsettings: { progress_interval: 100 }\n")
        #expect(result.exitCode == 1)
        #expect(result.lines.contains("\(file):16:32: error: 'settings.progress_interval' must be a duration (a unit is required: write 100ms or 100s), got '100'"),
                "\(result.stdoutText)")
    }

    @Test(.ownThread) func aMisspeltRequiredKeyIsNamedWhereItIsMissing() throws {
        let (result, file) = try lint(replacing("    bundle_id: com.example.signet", "    bundel_id: com.example.signet"))
        #expect(result.exitCode == 1)
        #expect(result.lines.contains("\(file):8:5: error: unknown key 'bundel_id' in 'stages[1]' (did you mean 'bundle_id'?)"), "\(result.stdoutText)")
        #expect(result.lines.contains("\(file):6:5: error: 'stages[1]' needs 'bundle_id' ('bundel_id' at 8:5 looks like a misspelling of it)"))
    }

    /// An unset ${VAR} stays a warning in an int, enum, duration or store-name key.
    @Test(.ownThread) func unsetVariablesInTypedKeysAreWarnings() throws {
        let yaml = replacing(
            "    environment: Sandbox\n",
            "    environment: ${LINT_ENV}\n    workers: ${LINT_WORKERS}\n    max_future_skew: ${LINT_SKEW}\n    roots: ${LINT_ROOTS}\n")
            .replacingOccurrences(of: "  - type: dedupe\n", with: "  - type: dedupe\n    store: ${LINT_STORE}\n")
        let (result, file) = try lint(yaml)
        #expect(result.exitCode == 0, "\(CLI.describe(result))")
        for (line, name) in [(7, "LINT_ENV"), (8, "LINT_WORKERS"), (9, "LINT_SKEW"), (10, "LINT_ROOTS"), (13, "LINT_STORE")] {
            #expect(result.lines.contains { $0.hasPrefix("\(file):\(line):") && $0.contains("warning: \(name) is not set") }, "\(result.stdoutText)")
        }
        #expect(result.stdoutText.contains("\(file): ok"))
        let (set, _) = try lint(yaml, environment: ["LINT_ENV": "Sandbox", "LINT_WORKERS": "two", "LINT_SKEW": "5m", "LINT_ROOTS": "apple", "LINT_STORE": "default"])
        #expect(set.exitCode == 1)
        #expect(set.stdoutText.contains("error: 'stages[1].workers' must be an integer, got 'two'"), "\(set.stdoutText)")
    }

    @Test(.ownThread) func anUnquotedVariableInAFlowMappingGetsAHint() throws {
        let (result, _) = try lint(replacing("  out: { type: stdout }", "  out: { type: file, path: ${OUT} }"))
        #expect(result.exitCode == 1)
        #expect(result.stdoutText.contains("must be quoted, e.g. key: \"${VAR}\""), "\(result.stdoutText)")
    }
}
