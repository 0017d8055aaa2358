import Foundation
import SignetTestSupport
import Testing

/// Hostile input never crashes or hangs `signet verify`: exit 1, one verdict per line, in order.
@Suite("signet verify on hostile input", .timeLimit(.minutes(10)))
struct HostileInputTests {
    /// A hostile line and the reason(s) it must be rejected with.
    struct Case: CustomStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        let reasons: Set<String>
        var description: String { name }
    }

    static func realLine(_ index: Int) -> String {
        (try? CLI.fileLines(CLI.realNotifications)[index]) ?? ""
    }

    static func realJWS(_ index: Int) -> String {
        (try? CLI.signedPayload(ofLine: realLine(index))) ?? ""
    }

    static let cases: [Case] = {
        let jws = realJWS(13)
        let parts = jws.split(separator: ".").map(String.init)
        let huge = String(repeating: "A", count: 300_000)
        return [
            Case(name: "empty line", bytes: [], reasons: ["malformed_json"]),
            Case(name: "whitespace line", bytes: Array(" \t  \r".utf8), reasons: ["malformed_json"]),
            Case(name: "invalid UTF-8", bytes: [0x7B, 0x22, 0xFF, 0xFE, 0xC0, 0x80, 0x22, 0x7D], reasons: ["invalid_utf8"]),
            Case(name: "lone continuation bytes", bytes: [0x80, 0x81, 0xBF], reasons: ["invalid_utf8"]),
            Case(name: "10 MB line", bytes: Array(#"{"signedPayload":""#.utf8) + [UInt8](repeating: UInt8(ascii: "A"), count: 10_000_000)
                + Array(#""}"#.utf8), reasons: ["line_too_large"]),
            Case(name: "100000 nested arrays", bytes: [UInt8](repeating: UInt8(ascii: "["), count: 100_000), reasons: ["malformed_json"]),
            Case(name: "100000 nested objects", bytes: Array(String(repeating: #"{"a":"#, count: 100_000).utf8),
                 reasons: ["malformed_json"]),
            Case(name: "100000 nested objects, closed", bytes: Array((String(repeating: #"{"a":"#, count: 100_000) + "1"
                + String(repeating: "}", count: 100_000)).utf8), reasons: ["malformed_json", "missing_signed_payload"]),
            Case(name: "signedPayload nested deep", bytes: Array((#"{"signedPayload":"# + String(repeating: "[", count: 100_000)).utf8),
                 reasons: ["malformed_json"]),
            Case(name: "JSON array", bytes: Array(#"["a", 1]"#.utf8), reasons: ["malformed_json"]),
            Case(name: "JSON number", bytes: Array("42".utf8), reasons: ["malformed_json"]),
            Case(name: "JSON string", bytes: Array(#""eyJhbGciOiJFUzI1NiJ9.e30.AA""#.utf8), reasons: ["malformed_json"]),
            Case(name: "JSON null", bytes: Array("null".utf8), reasons: ["malformed_json"]),
            Case(name: "signedPayload is a number", bytes: Array(#"{"signedPayload": 5}"#.utf8), reasons: ["malformed_json"]),
            Case(name: "signedPayload is null", bytes: Array(#"{"signedPayload": null}"#.utf8),
                 reasons: ["missing_signed_payload", "malformed_json"]),
            Case(name: "object without a signed field", bytes: Array(#"{"payload": "x"}"#.utf8), reasons: ["missing_signed_payload"]),
            Case(name: "two signed fields", bytes: Array(#"{"signedPayload":"a.b.c","signedTransaction":"a.b.c"}"#.utf8),
                 reasons: ["malformed_json"]),
            Case(name: "bare JWS with 4 segments", bytes: Array((jws + ".AAAA").utf8), reasons: ["malformed_json", "malformed_jws"]),
            Case(name: "signedPayload with 4 segments", bytes: Array((#"{"signedPayload":""# + jws + #".AAAA"}"#).utf8),
                 reasons: ["malformed_jws"]),
            Case(name: "signedPayload with 2 segments", bytes: Array((#"{"signedPayload":""# + parts[0] + "." + parts[1] + #""}"#).utf8),
                 reasons: ["malformed_jws"]),
            Case(name: "huge base64 segments", bytes: Array((#"{"signedPayload":""# + huge + "." + huge + "." + huge + #""}"#).utf8),
                 reasons: ["malformed_jws"]),
            // The signature is checked before the payload is parsed (nothing unauthenticated is
            // parsed), so this is invalid_signature; docs/verification.md lists the payload-is-JSON
            // check under step 1 (malformed_jws): either answer is a correct rejection.
            Case(name: "huge payload segment on a real header",
                 bytes: Array((#"{"signedPayload":""# + parts[0] + "." + huge + "." + parts[2] + #""}"#).utf8),
                 reasons: ["malformed_jws", "invalid_signature"]),
            Case(name: "padded base64", bytes: Array((#"{"signedPayload":""# + parts[0] + "." + parts[1] + "==." + parts[2] + #""}"#).utf8),
                 reasons: ["malformed_jws"]),
            Case(name: "NUL bytes only", bytes: [0, 0, 0, 0], reasons: ["malformed_json"]),
            Case(name: "NUL inside the JWS", bytes: Array(#"{"signedPayload":""#.utf8) + Array(jws.utf8.prefix(40)) + [0]
                + Array(jws.utf8.dropFirst(40)) + Array(#""}"#.utf8), reasons: ["malformed_json", "malformed_jws"]),
            Case(name: "NUL after the object", bytes: Array(realLine(13).utf8) + [0], reasons: ["malformed_json"]),
        ]
    }()

    /// Each hostile line, followed by a genuine notification: the hostile one is rejected with
    /// its reason, the genuine one still verifies.
    @Test(.ownThread, arguments: cases)
    func hostileLineIsRejectedAndTheNextStillVerifies(_ hostile: Case) throws {
        let good = Array(Self.realLine(13).utf8)
        let dir = try TemporaryDirectory(prefix: "signet-cli-hostile")
        defer { dir.remove() }
        let path = try CLI.write(CLI.ndjson([hostile.bytes, good]), to: dir, name: "hostile.ndjson")
        let result = try CLI.run(["verify", "--jobs", "2", path], timeout: 60)
        #expect(result.exitCode == 1, "\(hostile.name): \(CLI.describe(result))")
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == 2, "\(hostile.name): one verdict per line; \(CLI.describe(result))")
        #expect(verdicts[0]["line"] as? Int == 1)
        #expect(verdicts[0]["ok"] as? Bool == false)
        let reason = verdicts[0]["reason"] as? String ?? "(none)"
        #expect(hostile.reasons.contains(reason), "\(hostile.name): reason \(reason), expected one of \(hostile.reasons); \(verdicts[0])")
        #expect(verdicts[0]["detail"] is String)
        #expect(verdicts[1]["line"] as? Int == 2)
        #expect(verdicts[1]["ok"] as? Bool == true, "\(hostile.name): the next line must still verify: \(verdicts[1])")
        // Output stays small: a rejected line is never echoed whole.
        #expect(result.stdout.count < 64 * 1024, "\(hostile.name): \(result.stdout.count) bytes of output")
    }

    /// All of them in one stream (over stdin), interleaved with genuine lines: one verdict per line, in order.
    @Test(.ownThread) func allHostileLinesInOneStreamKeepOrder() throws {
        let good = Array(Self.realLine(13).utf8)
        var lines: [[UInt8]] = []
        var expected: [Set<String>?] = []  // nil: must verify
        for hostile in Self.cases {
            lines.append(hostile.bytes)
            expected.append(hostile.reasons)
            lines.append(good)
            expected.append(nil)
        }
        // A bare valid JWS is accepted as a notification.
        lines.append(Array(Self.realJWS(13).utf8))
        expected.append(nil)
        let result = try CLI.run(["verify", "--jobs", "2"], stdin: CLI.ndjson(lines), timeout: 90)
        #expect(result.exitCode == 1, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == lines.count, CLI.describe(result))
        for (index, verdict) in verdicts.enumerated() {
            #expect(verdict["line"] as? Int == index + 1)
            if let reasons = expected[index] {
                #expect(verdict["ok"] as? Bool == false, "line \(index + 1): \(verdict)")
                #expect(reasons.contains(verdict["reason"] as? String ?? ""), "line \(index + 1): \(verdict), expected \(reasons)")
            } else {
                #expect(verdict["ok"] as? Bool == true, "line \(index + 1): \(verdict)")
            }
        }
    }

    @Test(.ownThread) func bareValidJWSVerifies() throws {
        let lines = [Array(Self.realJWS(13).utf8), Array(("  " + Self.realJWS(20) + " \r").utf8)]
        let result = try CLI.run(["verify"], stdin: CLI.ndjson(lines))
        #expect(result.exitCode == 0, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == 2)
        let manifest = try CLI.manifestNotifications()
        #expect(verdicts[0]["ok"] as? Bool == true)
        #expect(verdicts[0]["notificationUUID"] as? String == manifest[13]["notificationUUID"] as? String)
        #expect(verdicts[1]["ok"] as? Bool == true, "\(verdicts[1])")
        #expect(verdicts[1]["notificationUUID"] as? String == manifest[20]["notificationUUID"] as? String)
    }

    /// A 2 MB line (a real notification padded with JSON whitespace) is too large by default and
    /// verifies with --max-line-bytes 4194304.
    @Test(.ownThread) func maxLineBytesRaisesTheLimit() throws {
        let jws = Self.realJWS(13)
        let padded = Array((#"{"signedPayload":""# + jws + #"""# + String(repeating: " ", count: 2_000_000) + "}").utf8)
        let good = Array(Self.realLine(14).utf8)
        let dir = try TemporaryDirectory(prefix: "signet-cli-maxline")
        defer { dir.remove() }
        let path = try CLI.write(CLI.ndjson([padded, good]), to: dir, name: "big.ndjson")

        let byDefault = try CLI.run(["verify", path])
        #expect(byDefault.exitCode == 1, CLI.describe(byDefault))
        let first = try CLI.jsonObjects(byDefault.stdoutText)
        try #require(first.count == 2)
        #expect(first[0]["reason"] as? String == "line_too_large", "\(first[0])")
        #expect(first[1]["ok"] as? Bool == true)

        let raised = try CLI.run(["verify", "--max-line-bytes", "4194304", path])
        #expect(raised.exitCode == 0, CLI.describe(raised))
        let second = try CLI.jsonObjects(raised.stdoutText)
        try #require(second.count == 2)
        #expect(second[0]["ok"] as? Bool == true, "\(second[0])")
        #expect(second[1]["ok"] as? Bool == true)

        // Exactly at the limit is accepted, one byte over is not (CRLF's \r does not count).
        let atLimit = Array((#"{"signedPayload":""# + jws + #"""#).utf8)
        let limit = atLimit.count + 100
        let fill = limit - atLimit.count - 1
        try #require(fill > 0)
        let exact = atLimit + [UInt8](repeating: 0x20, count: fill) + Array("}".utf8)
        let over = atLimit + [UInt8](repeating: 0x20, count: fill + 1) + Array("}".utf8)
        var data = CLI.ndjson([exact])
        data.append(contentsOf: exact + [0x0D, 0x0A])
        data.append(CLI.ndjson([over]))
        let edge = try CLI.run(["verify", "--max-line-bytes", String(limit)], stdin: data)
        let edgeVerdicts = try CLI.jsonObjects(edge.stdoutText)
        try #require(edgeVerdicts.count == 3, CLI.describe(edge))
        #expect(edgeVerdicts[0]["ok"] as? Bool == true, "\(edgeVerdicts[0])")
        #expect(edgeVerdicts[1]["ok"] as? Bool == true, "CRLF at the limit: \(edgeVerdicts[1])")
        #expect(edgeVerdicts[2]["reason"] as? String == "line_too_large", "\(edgeVerdicts[2])")
    }

    /// The last line without a trailing newline is still a line; CRLF endings work.
    @Test(.ownThread) func lineEndings() throws {
        let a = Self.realLine(13), b = Self.realLine(14)
        let input = Data((a + "\r\n" + b).utf8)
        let result = try CLI.run(["verify"], stdin: input)
        #expect(result.exitCode == 0, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        #expect(verdicts.count == 2)
        #expect(verdicts.allSatisfy { $0["ok"] as? Bool == true })
    }

    @Test(.ownThread) func emptyInputIsSuccessWithNoOutput() throws {
        let result = try CLI.run(["verify"], stdin: Data())
        #expect(result.exitCode == 0, CLI.describe(result))
        #expect(result.stdout.isEmpty)
    }

    // MARK: - Exit codes

    @Test(.ownThread, arguments: [
        ["verify", "--no-such-flag"],
        ["verify", "--jobs", "0"],
        ["verify", "--jobs", "-3"],
        ["verify", "--jobs", "many"],
        ["verify", "--max-line-bytes", "10"],
        ["verify", "/nonexistent/signet/input.ndjson"],
        ["verify", "--root", "/nonexistent/signet/root.pem"],
        ["no-such-command"],
    ])
    func usageErrorsExitWith2(_ arguments: [String]) throws {
        let result = try CLI.run(arguments + (arguments.contains { $0.hasPrefix("/nonexistent/signet/input") } ? [] : [CLI.realNotifications]))
        #expect(result.exitCode == 2, "\(arguments): \(CLI.describe(result))")
        #expect(result.stdout.isEmpty, "\(arguments): no verdicts on a usage error")
        #expect(!result.stderr.isEmpty, "\(arguments): the error is explained on stderr")
    }

    /// Regression: a misspelt --environment once silently rejected every line (exit 1) instead of a usage error.
    @Test(.ownThread, arguments: ["sandbox", "Prod", "Bogus"])
    func unknownEnvironmentIsAUsageError(_ environment: String) throws {
        let result = try CLI.run(["verify", "--environment", environment, CLI.realNotifications])
        #expect(result.exitCode == 2, CLI.describe(result))
        #expect(result.stdout.isEmpty, "no verdicts on a usage error")
        #expect(result.stderr.contains(environment), "the message names the value: \(result.stderr)")
    }

    /// Regression: a directory given as input once failed mid-read with exit 1 instead of a usage error.
    @Test(.ownThread) func directoryAsInputIsAUsageError() throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-dirinput")
        defer { dir.remove() }
        let result = try CLI.run(["verify", dir.url.path])
        #expect(result.exitCode == 2, CLI.describe(result))
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains(dir.url.path), "the message names the directory: \(result.stderr)")
    }

    @Test(.ownThread) func rootThatIsNotACertificateExitsWith2() throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-badroot")
        defer { dir.remove() }
        let text = try CLI.write(Data("this is not a certificate\n".utf8), to: dir, name: "root.pem")
        let key = try CLI.write(
            Data("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n".utf8), to: dir, name: "garbage.pem")
        let empty = try CLI.write(Data(), to: dir, name: "empty.pem")
        for path in [text, key, empty, dir.url.path] {
            let result = try CLI.run(["verify", "--root", path, CLI.realNotifications])
            #expect(result.exitCode == 2, "--root \(path): \(CLI.describe(result))")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(path), "the message names the file: \(result.stderr)")
        }
        let missing = try CLI.run(["verify", "--root", dir.path("missing.pem"), CLI.realNotifications])
        #expect(missing.stderr.contains(dir.path("missing.pem")), "the message names the file: \(missing.stderr)")
    }

    /// Apple's other roots (G2, the 2006 root) are certificates but do not anchor these chains.
    @Test(.ownThread) func otherAppleRootRejectsEveryLineWithChainError() throws {
        let g2 = CLI.appleReal.appendingPathComponent("AppleRootCA-G2.pem").path
        let result = try CLI.run(["verify", "--root", g2, CLI.realNotifications])
        #expect(result.exitCode == 1, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == 29)
        for (index, verdict) in verdicts.enumerated() {
            if index == 28 {
                #expect(CLI.rejects(verdict, for: ["invalid_certificate_chain"], nestedToo: true), "\(verdict)")
            } else {
                #expect(verdict["reason"] as? String == "invalid_certificate_chain", "\(verdict)")
            }
        }
        // G3 given explicitly (DER) behaves like the built-in root.
        let g3 = CLI.appleReal.appendingPathComponent("AppleRootCA-G3.der").path
        let explicit = try CLI.run(["verify", "--root", g3, CLI.realNotifications])
        #expect(explicit.exitCode == 0, CLI.describe(explicit))
        #expect(explicit.lines.count == 29)
    }
}
