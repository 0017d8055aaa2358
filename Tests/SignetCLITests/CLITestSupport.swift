import Foundation
import SignetTestSupport
import Synchronization
import Testing

/// Shared helpers for the end-to-end tests of the `signet` binary.
enum CLI {
    /// Runs `signet` (SIGNET_* variables of the test process are removed by SignetProcess).
    /// A run that exceeds `timeout` comes back with exit code -1, so a hang fails the test instead of blocking it.
    @discardableResult
    static func run(
        _ arguments: [String], stdin: Data = Data(), environment: [String: String] = [:],
        currentDirectory: URL? = nil, timeout: TimeInterval = 60
    ) throws -> SignetProcess.Result {
        ignoreSIGPIPE
        return try SignetProcess.run(
            arguments, stdin: stdin, environment: environment, currentDirectory: currentDirectory, timeout: timeout)
    }

    /// A child that exits before reading all of its stdin must not kill the test process.
    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

    static let appleReal = FixturePaths.appleReal
    static let realNotifications = appleReal.appendingPathComponent("notifications.ndjson").path
    static let realTransactions = appleReal.appendingPathComponent("transactions.ndjson").path
    static let realRenewalInfos = appleReal.appendingPathComponent("renewal-infos.ndjson").path
    static let manifestPath = appleReal.appendingPathComponent("manifest.json").path

    /// The lines of a file (without terminators, no trailing empty line).
    static func fileLines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init).filter { !$0.isEmpty }
    }

    /// The manifest entries for notifications.ndjson, in line order.
    static func manifestNotifications() throws -> [[String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: manifestPath))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require(root["notifications"] as? [[String: Any]])
    }

    /// Parses NDJSON bytes into objects; a line that is not a JSON object fails the test.
    static func jsonObjects(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try #require(object as? [String: Any], "not a JSON object: \(line.prefix(200))", sourceLocation: sourceLocation)
        }
    }

    /// Builds NDJSON input from raw lines (each gets a "\n").
    static func ndjson(_ lines: [[UInt8]]) -> Data {
        var data = Data()
        for line in lines {
            data.append(contentsOf: line)
            data.append(0x0A)
        }
        return data
    }

    /// Decodes unpadded base64url.
    static func base64URLDecode(_ text: Substring) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }

    /// Encodes as unpadded base64url.
    static func base64URLEncode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The JWS inside a `{"signedPayload": "..."}` line.
    static func signedPayload(ofLine line: String) throws -> String {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return try #require(object["signedPayload"] as? String)
    }

    /// A temp file with `data`, inside `directory`.
    @discardableResult
    static func write(_ data: Data, to directory: TemporaryDirectory, name: String) throws -> String {
        let path = directory.path(name)
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Whether a verdict rejects for one of `reasons`, directly or (when `nestedToo`) as
    /// nested_jws_invalid whose detail names one of them. Line 29 of the real set has no
    /// signedDate, so its nested transaction is verified first (docs/verification.md) and either
    /// report is correct.
    static func rejects(_ verdict: [String: Any], for reasons: Set<String>, nestedToo: Bool) -> Bool {
        guard verdict["ok"] as? Bool == false, let reason = verdict["reason"] as? String else { return false }
        if reasons.contains(reason) { return true }
        guard nestedToo, reason == "nested_jws_invalid", let detail = verdict["detail"] as? String else { return false }
        return reasons.contains { detail.contains($0) }
    }

    /// Readable summary of a failed run for #expect messages.
    static func describe(_ result: SignetProcess.Result) -> Comment {
        "exit \(result.exitCode); stderr: \(result.stderr.prefix(2000)); stdout: \(result.stdoutText.prefix(1000))"
    }
}

/// A `signet fixtures` folder made once per test process and shared (read-only) by every test.
struct GeneratedFixtures: Sendable {
    let directory: String
    var root: String { directory + "/root.pem" }
    var notifications: String { directory + "/notifications.ndjson" }
    var transactions: String { directory + "/transactions.ndjson" }
    var forged: String { directory + "/forged.ndjson" }
    var env: String { directory + "/fixtures.env" }
    static let count = 120
    static let bundleId = "com.example.signet"

    private static let made: Result<GeneratedFixtures, FixtureFailure> = {
        do {
            let directory = try TemporaryDirectory(prefix: "signet-cli-fixtures")
            cleanupPath.withLock { $0 = directory.url.path }
            atexit { if let path = GeneratedFixtures.cleanupPath.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) } }
            let out = directory.path("fx")
            let result = try CLI.run(["fixtures", "--out", out, "--count", String(count)])
            guard result.exitCode == 0 else {
                return .failure(FixtureFailure(description: "signet fixtures failed: \(CLI.describe(result))"))
            }
            return .success(GeneratedFixtures(directory: out))
        } catch {
            return .failure(FixtureFailure(description: "signet fixtures could not run: \(error)"))
        }
    }()

    /// Removed when the test process exits.
    private static let cleanupPath = Mutex<String?>(nil)

    /// The shared folder (generated on first use).
    static func shared() throws -> GeneratedFixtures { try made.get() }

    struct FixtureFailure: Error, CustomStringConvertible { var description: String }
}

/// JSON Schema validation through python3 + jsonschema (the tool docs/README point at).
enum SchemaValidator {
    static let script = #"""
    import json, sys
    try:
        import jsonschema
    except Exception as e:
        print("UNAVAILABLE: %s" % e); sys.exit(3)
    schema = json.load(open(sys.argv[1]))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    v = cls(schema, format_checker=cls.FORMAT_CHECKER)
    bad = 0
    count = 0
    for n, line in enumerate(open(sys.argv[2], encoding="utf-8"), 1):
        if not line.strip():
            continue
        count += 1
        doc = json.loads(line)
        for err in v.iter_errors(doc):
            bad += 1
            print("line %d: %s at %s" % (n, err.message[:300], list(err.absolute_path)))
    print("VALIDATED %d" % count)
    sys.exit(1 if bad else 0)
    """#

    /// nil when python3 or jsonschema is missing (the caller records why and skips).
    static var unavailableReason: String? { Python.unavailableReason() }

    /// Validates every line of `ndjson` against `schema`; returns (exit status, output).
    static func validate(ndjson: String, schema: String) throws -> (status: Int32, output: String) {
        try Python.run(script, arguments: [schema, ndjson])
    }
}
