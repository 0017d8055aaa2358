import Foundation
import SignetTestSupport
import Testing

/// `signet verify` against the 29 real Apple notifications and Apple's built-in root.
@Suite("signet verify on real Apple notifications", .timeLimit(.minutes(10)))
struct VerifyRealNotificationsTests {
    @Test(.ownThread) func allRealNotificationsVerifyAndMatchTheManifest() throws {
        let result = try CLI.run(["verify", CLI.realNotifications])
        #expect(result.exitCode == 0, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        let manifest = try CLI.manifestNotifications()
        try #require(manifest.count == 29)
        try #require(verdicts.count == 29, CLI.describe(result))
        for (index, verdict) in verdicts.enumerated() {
            let expected = manifest[index]
            let line = index + 1
            #expect(verdict["line"] as? Int == line)
            #expect(expected["line"] as? Int == line)
            #expect(verdict["ok"] as? Bool == true, "line \(line): \(verdict)")
            #expect(verdict["kind"] as? String == "notification", "line \(line)")
            #expect(verdict["file"] == nil, "one input file: no \"file\" key")
            for key in ["notificationType", "subtype", "notificationUUID", "environment", "bundleId"] {
                let want = expected[key] as? String  // nil for JSON null
                let got = verdict[key] as? String
                #expect(verdict.keys.contains(key), "line \(line): \(key) missing")
                #expect(got == want, "line \(line): \(key) is \(got ?? "null"), manifest says \(want ?? "null")")
            }
            let wantDate = (expected["signedDate"] as? NSNumber)?.int64Value
            let gotDate = (verdict["signedDate"] as? NSNumber)?.int64Value
            #expect(verdict.keys.contains("signedDate"), "line \(line): signedDate missing")
            #expect(gotDate == wantDate, "line \(line): signedDate \(String(describing: gotDate)) vs \(String(describing: wantDate))")
        }
    }

    /// One payload byte of line K changed (re-encoded as valid base64url, still valid JSON):
    /// only line K fails, with invalid_signature.
    @Test(.ownThread, arguments: [1, 14, 29])
    func tamperedPayloadByteIsRejectedOnItsLineOnly(k: Int) throws {
        var lines = try CLI.fileLines(CLI.realNotifications)
        try #require(lines.count == 29)
        let jws = try CLI.signedPayload(ofLine: lines[k - 1])
        var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        var payload = try #require(CLI.base64URLDecode(Substring(parts[1])))
        // Change one hex digit of notificationUUID: the payload stays a valid JSON object of the same shape.
        let text = String(decoding: payload, as: UTF8.self)
        let marker = try #require(text.range(of: "\"notificationUUID\":\""), "line \(k) has a notificationUUID")
        let offset = text.utf8.distance(from: text.startIndex, to: marker.upperBound)
        let original = payload[payload.startIndex + offset]
        payload[payload.startIndex + offset] = original == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        parts[1] = CLI.base64URLEncode(payload)
        #expect(parts[1] != jws.split(separator: ".")[1].description)
        lines[k - 1] = #"{"signedPayload":""# + parts.joined(separator: ".") + #""}"#

        let dir = try TemporaryDirectory(prefix: "signet-cli-tamper")
        defer { dir.remove() }
        let path = try CLI.write(Data((lines.joined(separator: "\n") + "\n").utf8), to: dir, name: "tampered.ndjson")
        let result = try CLI.run(["verify", path])
        #expect(result.exitCode == 1, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == 29, CLI.describe(result))
        for (index, verdict) in verdicts.enumerated() {
            #expect(verdict["line"] as? Int == index + 1)
            if index + 1 == k {
                #expect(verdict["ok"] as? Bool == false)
                #expect(verdict["reason"] as? String == "invalid_signature", "line \(k): \(verdict)")
                #expect((verdict["detail"] as? String)?.isEmpty == false)
            } else {
                #expect(verdict["ok"] as? Bool == true, "line \(index + 1): \(verdict)")
            }
        }
    }

    @Test(.ownThread) func productionWithoutAppAppleIdIsAUsageError() throws {
        let result = try CLI.run(["verify", "--environment", "Production", CLI.realNotifications])
        #expect(result.exitCode == 2, CLI.describe(result))
        #expect(result.stdout.isEmpty, "no verdicts on a configuration error")
        let message = result.stderr.lowercased()
        #expect(message.contains("production"), "the message names the environment: \(result.stderr)")
        #expect(message.contains("app-apple-id") || message.contains("appappleid") || message.contains("app apple id"),
                "the message says an app Apple ID is needed: \(result.stderr)")
    }

    /// The Sandbox notifications of the app whose ID is configured fail on the environment claim;
    /// every Sandbox notification is rejected; the Production one of that app verifies.
    @Test(.ownThread) func productionRejectsSandboxNotifications() throws {
        let manifest = try CLI.manifestNotifications()
        // com.loki-project.loki-messenger: Sandbox lines 14...28 carry this appAppleId.
        let result = try CLI.run(["verify", "--environment", "Production", "--app-apple-id", "1470168868", CLI.realNotifications])
        #expect(result.exitCode == 1, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == 29, CLI.describe(result))
        for (index, verdict) in verdicts.enumerated() {
            let entry = manifest[index]
            #expect(verdict["line"] as? Int == index + 1)
            #expect(verdict["ok"] as? Bool == false, "line \(index + 1) must be rejected: \(verdict)")
            let reason = verdict["reason"] as? String
            if index == 28 {
                // Sandbox, no appAppleId, no signedDate.
                #expect(CLI.rejects(verdict, for: ["app_apple_id_mismatch", "environment_mismatch"], nestedToo: true), "line 29: \(verdict)")
            } else if entry["environment"] as? String == "Sandbox", (entry["appAppleId"] as? NSNumber)?.int64Value == 1_470_168_868 {
                #expect(reason == "environment_mismatch", "line \(index + 1): \(verdict)")
            } else {
                // Production payloads of other apps, and Sandbox payloads of other apps (Apple's order:
                // bundle, app id in Production, environment).
                #expect(reason == "app_apple_id_mismatch" || reason == "environment_mismatch", "line \(index + 1): \(verdict)")
                if entry["environment"] as? String == "Production" {
                    #expect(reason == "app_apple_id_mismatch", "line \(index + 1): \(verdict)")
                }
            }
        }
        #expect(verdicts.filter { $0["reason"] as? String == "environment_mismatch" }.count >= 15)

        // Line 3 is Production, app 1601830814: it verifies with that ID; the Sandbox ones still do not.
        let production = try CLI.run(["verify", "--environment", "Production", "--app-apple-id", "1601830814", CLI.realNotifications])
        #expect(production.exitCode == 1, CLI.describe(production))
        let second = try CLI.jsonObjects(production.stdoutText)
        try #require(second.count == 29)
        #expect(second[2]["ok"] as? Bool == true, "line 3: \(second[2])")
        #expect(second[2]["environment"] as? String == "Production")
        for (index, verdict) in second.enumerated() where manifest[index]["environment"] as? String == "Sandbox" {
            #expect(verdict["ok"] as? Bool == false, "Sandbox line \(index + 1) accepted by a Production verifier")
        }
    }

    @Test(.ownThread) func sandboxEnvironmentAcceptsTheSandboxOnes() throws {
        let manifest = try CLI.manifestNotifications()
        let result = try CLI.run(["verify", "--environment", "Sandbox", CLI.realNotifications])
        #expect(result.exitCode == 1, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == 29)
        for (index, verdict) in verdicts.enumerated() {
            if manifest[index]["environment"] as? String == "Sandbox" {
                #expect(verdict["ok"] as? Bool == true, "line \(index + 1): \(verdict)")
            } else {
                #expect(verdict["reason"] as? String == "environment_mismatch", "line \(index + 1): \(verdict)")
            }
        }
    }

    @Test(.ownThread) func otherBundleIdIsRejectedEverywhere() throws {
        let result = try CLI.run(["verify", "--bundle-id", "com.other", CLI.realNotifications])
        #expect(result.exitCode == 1, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == 29)
        for (index, verdict) in verdicts.enumerated() {
            #expect(verdict["line"] as? Int == index + 1)
            #expect(verdict["ok"] as? Bool == false)
            if index == 28 {
                #expect(CLI.rejects(verdict, for: ["bundle_id_mismatch"], nestedToo: true), "line 29: \(verdict)")
            } else {
                #expect(verdict["reason"] as? String == "bundle_id_mismatch", "line \(index + 1): \(verdict)")
            }
        }
        // The right bundle id for line 14's app accepts exactly that app's lines.
        let manifest = try CLI.manifestNotifications()
        let loki = try CLI.run(["verify", "--bundle-id", "com.loki-project.loki-messenger", CLI.realNotifications])
        let lokiVerdicts = try CLI.jsonObjects(loki.stdoutText)
        try #require(lokiVerdicts.count == 29)
        for (index, verdict) in lokiVerdicts.enumerated() {
            let mine = manifest[index]["bundleId"] as? String == "com.loki-project.loki-messenger"
            #expect(verdict["ok"] as? Bool == mine, "line \(index + 1): \(verdict)")
        }
    }

    @Test(.ownThread) func realTransactionsVerify() throws {
        let expectedCount = try CLI.fileLines(CLI.realTransactions).count
        let result = try CLI.run(["verify", CLI.realTransactions])
        #expect(result.exitCode == 0, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        #expect(verdicts.count == expectedCount)
        for (index, verdict) in verdicts.enumerated() {
            #expect(verdict["line"] as? Int == index + 1)
            #expect(verdict["ok"] as? Bool == true, "line \(index + 1): \(verdict)")
            #expect(verdict["kind"] as? String == "transaction")
            #expect(verdict["transactionId"] is String, "line \(index + 1): \(verdict)")
        }
    }

    @Test(.ownThread) func realRenewalInfosVerify() throws {
        let expectedCount = try CLI.fileLines(CLI.realRenewalInfos).count
        let result = try CLI.run(["verify", CLI.realRenewalInfos])
        #expect(result.exitCode == 0, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        #expect(verdicts.count == expectedCount)
        for (index, verdict) in verdicts.enumerated() {
            #expect(verdict["line"] as? Int == index + 1)
            #expect(verdict["ok"] as? Bool == true, "line \(index + 1): \(verdict)")
            #expect(verdict["kind"] as? String == "renewalInfo")
        }
    }

    @Test(.ownThread) func multipleFilesNameTheirFile() throws {
        let files = [CLI.realNotifications, CLI.realTransactions, CLI.realRenewalInfos]
        let counts = try files.map { try CLI.fileLines($0).count }
        let result = try CLI.run(["verify"] + files)
        #expect(result.exitCode == 0, CLI.describe(result))
        let verdicts = try CLI.jsonObjects(result.stdoutText)
        try #require(verdicts.count == counts.reduce(0, +))
        var index = 0
        for (file, count) in zip(files, counts) {
            for line in 1...count {
                let verdict = verdicts[index]
                #expect(verdict["file"] as? String == file, "verdict \(index): \(verdict)")
                #expect(verdict["line"] as? Int == line, "verdict \(index): \(verdict)")
                #expect(verdict["ok"] as? Bool == true)
                index += 1
            }
        }
    }

    @Test(.ownThread) func standardInputGivesTheSameVerdicts() throws {
        let fromFile = try CLI.run(["verify", CLI.realNotifications])
        let input = try Data(contentsOf: URL(fileURLWithPath: CLI.realNotifications))
        let fromStdin = try CLI.run(["verify"], stdin: input)
        #expect(fromStdin.exitCode == 0, CLI.describe(fromStdin))
        #expect(fromStdin.lines.count == 29)
        #expect(fromStdin.stdout == fromFile.stdout, "stdin and file input give byte-identical verdicts")
        let verdicts = try CLI.jsonObjects(fromStdin.stdoutText)
        #expect(verdicts.allSatisfy { $0["file"] == nil })
    }
}
