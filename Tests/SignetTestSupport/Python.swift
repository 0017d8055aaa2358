import Foundation

/// Runs small Python checks (JSON Schema validation with `jsonschema`, YAML with PyYAML)
/// that tests use as an independent second opinion. `scripts/install-deps.sh` installs them.
public enum Python {
    /// nil when python3 can import every module; otherwise why not (the test skips with it).
    public static func unavailableReason(modules: [String] = ["jsonschema"]) -> String? {
        guard let result = try? run("import " + modules.joined(separator: ", "), arguments: []) else {
            return "python3 is not available"
        }
        return result.status == 0
            ? nil : "python3 cannot import \(modules.joined(separator: ", ")) (scripts/install-deps.sh installs them)"
    }

    /// Whether python3 can import every module.
    public static func canImport(_ modules: [String] = ["jsonschema"]) -> Bool {
        unavailableReason(modules: modules) == nil
    }

    /// Runs `python3 -c script arguments...`; stdout and stderr together.
    public static func run(_ script: String, arguments: [String]) throws -> (status: Int32, output: String) {
        let result = try SignetProcess.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script] + arguments)
        return (result.exitCode, result.stdoutText + result.stderr)
    }
}
