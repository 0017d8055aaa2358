import Foundation
import SignetTestSupport
import Testing

/// `signet fixtures` output verified by `signet verify` with the private root.
@Suite("signet fixtures + verify", .timeLimit(.minutes(10)))
struct FixturesVerifyTests {
    func claims(_ fixtures: GeneratedFixtures) -> [String] {
        ["--root", fixtures.root, "--environment", "Sandbox", "--bundle-id", GeneratedFixtures.bundleId]
    }

    @Test(.ownThread) func fixturesFolderHasEveryFile() throws {
        let fixtures = try GeneratedFixtures.shared()
        for path in [fixtures.root, fixtures.notifications, fixtures.transactions, fixtures.forged, fixtures.env] {
            #expect(FileManager.default.fileExists(atPath: path), "\(path) missing")
        }
        #expect(try CLI.fileLines(fixtures.notifications).count == GeneratedFixtures.count)
        #expect(try !CLI.fileLines(fixtures.transactions).isEmpty)
        let env = try String(contentsOfFile: fixtures.env, encoding: .utf8)
        #expect(env.contains("SIGNET_ROOT_CERTS="))
        #expect(env.contains("SIGNET_ENVIRONMENT=Sandbox"))
        #expect(env.contains("SIGNET_BUNDLE_ID=\(GeneratedFixtures.bundleId)"))
        #expect(try String(contentsOfFile: fixtures.root, encoding: .utf8).contains("-----BEGIN CERTIFICATE-----"))
    }

    @Test(.ownThread) func everyGeneratedNotificationVerifies() throws {
        let fixtures = try GeneratedFixtures.shared()
        let result = try CLI.run(["verify"] + claims(fixtures) + [fixtures.notifications])
        #expect(result.exitCode == 0, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        #expect(verdicts.count == GeneratedFixtures.count)
        var types: Set<String> = []
        for (index, verdict) in verdicts.enumerated() {
            #expect(verdict["line"] as? Int == index + 1)
            #expect(verdict["ok"] as? Bool == true, "line \(index + 1): \(verdict)")
            #expect(verdict["environment"] as? String == "Sandbox")
            #expect(verdict["bundleId"] as? String == GeneratedFixtures.bundleId)
            if let type = verdict["notificationType"] as? String { types.insert(type) }
        }
        #expect(types.count > 5, "samples cover many notification types: \(types)")
        let uuids = Set(verdicts.compactMap { $0["notificationUUID"] as? String })
        #expect(uuids.count == GeneratedFixtures.count, "every notification has its own UUID")
    }

    @Test(.ownThread) func generatedTransactionsVerify() throws {
        let fixtures = try GeneratedFixtures.shared()
        let count = try CLI.fileLines(fixtures.transactions).count
        let result = try CLI.run(["verify"] + claims(fixtures) + [fixtures.transactions])
        #expect(result.exitCode == 0, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        #expect(verdicts.count == count)
        #expect(verdicts.allSatisfy { $0["ok"] as? Bool == true && $0["kind"] as? String == "transaction" })
    }

    /// The private root is not Apple's: without --root everything fails the chain.
    @Test(.ownThread) func generatedNotificationsFailAgainstAppleRoot() throws {
        let fixtures = try GeneratedFixtures.shared()
        let result = try CLI.run(["verify", fixtures.notifications])
        #expect(result.exitCode == 1, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        #expect(verdicts.count == GeneratedFixtures.count)
        for verdict in verdicts {
            #expect(verdict["reason"] as? String == "invalid_certificate_chain", "\(verdict)")
        }
    }

    @Test(.ownThread) func everyForgedLineIsRejectedWithItsReason() throws {
        let fixtures = try GeneratedFixtures.shared()
        let result = try CLI.run(["verify"] + claims(fixtures) + [fixtures.forged])
        #expect(result.exitCode == 1, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        let lineCount = try CLI.fileLines(fixtures.forged).count
        try #require(verdicts.count == lineCount, CLI.describe(result))
        #expect(verdicts.allSatisfy { $0["ok"] as? Bool == false }, "every forged line is rejected")
        let reasons = verdicts.map { $0["reason"] as? String ?? "(none)" }
        // ForgedLines: tampered payload, rogue PKI, other app, alg none, not a JWS, no signedPayload, truncated JSON.
        #expect(reasons == [
            "invalid_signature", "invalid_certificate_chain", "bundle_id_mismatch", "unsupported_algorithm",
            "malformed_jws", "missing_signed_payload", "malformed_json",
        ], "\(verdicts)")
        #expect(Set(reasons).count == reasons.count, "each forged line fails for its own reason")
    }

    /// Concurrency never changes the output: --jobs 1 and --jobs 2 are byte-identical, with
    /// more than one batch (512 lines) in flight.
    @Test(.ownThread) func jobsDoNotChangeTheOutput() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory(prefix: "signet-cli-jobs")
        defer { dir.remove() }
        // Interleave genuine and forged lines, more than one batch.
        let good = try CLI.fileLines(fixtures.notifications)
        let bad = try CLI.fileLines(fixtures.forged)
        var lines: [String] = []
        var index = 0
        while lines.count < 700 {
            lines.append(good[index % good.count])
            if index % 5 == 0 { lines.append(bad[(index / 5) % bad.count]) }
            index += 1
        }
        let mixed = try CLI.write(Data((lines.joined(separator: "\n") + "\n").utf8), to: dir, name: "mixed.ndjson")
        let files = [mixed, fixtures.transactions]
        let one = try CLI.run(["verify", "--jobs", "1"] + claims(fixtures) + files, timeout: 90)
        let two = try CLI.run(["verify", "--jobs", "2"] + claims(fixtures) + files, timeout: 90)
        #expect(one.exitCode == 1, CLI.describe(one))
        #expect(two.exitCode == 1, CLI.describe(two))
        #expect(one.lines.count == lines.count + (try CLI.fileLines(fixtures.transactions).count))
        #expect(one.stdout == two.stdout, "--jobs 1 and --jobs 2 output differ")
        let verdicts = try CLI.jsonObjects(one.stdoutText)
        let firstFile = verdicts.prefix(lines.count)
        for (offset, verdict) in firstFile.enumerated() {
            #expect(verdict["line"] as? Int == offset + 1)
            #expect(verdict["file"] as? String == mixed)
        }
        let rejected = firstFile.filter { $0["ok"] as? Bool == false }.count
        #expect(rejected == lines.filter { bad.contains($0) }.count)
    }

    /// The leaf certificate a notification line carries (x5c[0] of its JWS header), as base64 DER.
    static func leafOfFirstNotification(_ path: String) throws -> String {
        let line = try #require(try CLI.fileLines(path).first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        var header = String(try #require(object["signedPayload"]).split(separator: ".")[0])
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while header.count % 4 != 0 { header += "=" }
        let data = try #require(Data(base64Encoded: header))
        let x5c = try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["x5c"] as? [String])
        return try #require(x5c.first)
    }

    /// A PEM certificate file's base64 body on one line.
    static func pemBody(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }

    static func openssl(_ arguments: [String]) throws -> String {
        try SignetProcess.run(executable: ChildProcess.env, ["openssl"] + arguments, timeout: 30).stdoutText
    }

    @Test("issue 53: pki/*.pem are the chain the last call's notifications carry; the leaf serial follows the key (same on every call, not 0300, differs between PKIs); --leaf-crl-url names a CRL")
    func pkiFilesMatchTheNotificationsAndSerialsDiffer() throws {
        let directory = try TemporaryDirectory(prefix: "signet-cli-pki")
        defer { directory.remove() }
        let (first, second) = (directory.path("a"), directory.path("b"))
        for out in [first, second] { try #require(CLI.run(["fixtures", "--out", out, "--count", "2"]).exitCode == 0) }
        func serial(_ out: String) throws -> String { try Self.openssl(["x509", "-in", out + "/pki/leaf.pem", "-noout", "-serial"]) }
        let serialBefore = try serial(first)
        #expect(!serialBefore.isEmpty && serialBefore.trimmingCharacters(in: .whitespacesAndNewlines) != "serial=0300", "\(serialBefore)")
        #expect(try serial(second) != serialBefore, "two PKIs, two leaf serials")

        // Again into the first folder, now naming responders: its keys are reused, its files follow.
        let again = try CLI.run([
            "fixtures", "--out", first, "--count", "2", "--leaf-ocsp-url", "http://127.0.0.1:9/ocsp",
            "--leaf-crl-url", "http://127.0.0.1:9/intermediate.crl",
        ])
        try #require(again.exitCode == 0, CLI.describe(again))
        #expect(try Self.leafOfFirstNotification(first + "/notifications.ndjson") == Self.pemBody(first + "/pki/leaf.pem"))
        #expect(try serial(first) == serialBefore, "the same key keeps its serial")
        let text = try Self.openssl(["x509", "-in", first + "/pki/leaf.pem", "-noout", "-text"])
        #expect(text.contains("CRL Distribution Points") && text.contains("http://127.0.0.1:9/intermediate.crl"), "\(text)")
        // Still verified with the root file written beside them.
        let verified = try CLI.run(["verify", "--root", first + "/root.pem", first + "/notifications.ndjson"])
        #expect(verified.exitCode == 0, CLI.describe(verified))
    }
}
