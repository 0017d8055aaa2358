import Foundation
import Signet
import SignetCore
import SignetTestSupport
import Testing

/// `signet decode`, help texts, `signet components`, `signet --version`.
@Suite("signet decode, help, components, version", .timeLimit(.minutes(10)))
struct DecodeAndHelpTests {
    @Test(.ownThread) func decodeShowsHeaderAndPayloadUnverified() throws {
        let manifest = try CLI.manifestNotifications()
        let lines = try CLI.fileLines(CLI.realNotifications)
        let input = Data((lines[0] + "\n" + lines[13] + "\n").utf8)
        let result = try CLI.run(["decode"], stdin: input)
        #expect(result.exitCode == 0, CLI.describe(result))
        let objects = try CLI.jsonObjects(result.stdoutText)
        try #require(objects.count == 2)
        for (object, index) in zip(objects, [0, 13]) {
            #expect(object["verified"] as? Bool == false, "decode never claims verification: \(object)")
            #expect(object["line"] as? Int == (index == 0 ? 1 : 2))
            #expect(object["kind"] as? String == "notification")
            let header = try #require(object["header"] as? [String: Any])
            #expect(header["alg"] as? String == "ES256")
            #expect((header["x5c"] as? [Any])?.count == 3)
            let payload = try #require(object["payload"] as? [String: Any])
            #expect(payload["notificationType"] as? String == manifest[index]["notificationType"] as? String)
            #expect(payload["notificationUUID"] as? String == manifest[index]["notificationUUID"] as? String)
            let transaction = try #require(object["signedTransactionInfo"] as? [String: Any], "nested transaction decoded")
            #expect((transaction["header"] as? [String: Any])?["alg"] as? String == "ES256")
            #expect(transaction["payload"] is [String: Any])
        }
    }

    @Test(.ownThread) func decodeShowsAStatusLineAndIndentsOnRequest() throws {
        // A real notification's nested pair, as Get All Subscription Statuses lists them.
        let line = try #require(try CLI.fileLines(CLI.realNotifications).first)
        let payloadPart = try #require(try CLI.signedPayload(ofLine: line).split(separator: ".").dropFirst().first)
        let payloadBytes = try #require(CLI.base64URLDecode(payloadPart))
        let payload = try #require(try JSONSerialization.jsonObject(with: payloadBytes) as? [String: Any])
        let data = try #require(payload["data"] as? [String: Any])
        let transaction = try #require(data["signedTransactionInfo"] as? String), renewal = try #require(data["signedRenewalInfo"] as? String)
        let status = #"{"status":1,"signedTransactionInfo":"\#(transaction)","signedRenewalInfo":"\#(renewal)"}"#
        let result = try CLI.run(["decode", "--pretty"], stdin: Data((status + "\n").utf8))
        #expect(result.exitCode == 0, CLI.describe(result))
        #expect(result.stdoutText.split(separator: "\n").count > 10, "indented over several lines")
        let object = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        #expect(object["kind"] as? String == "status" && object["status"] as? Int == 1 && object["verified"] as? Bool == false)
        #expect((object["payload"] as? [String: Any])?["transactionId"] != nil)
        #expect(((object["signedRenewalInfo"] as? [String: Any])?["payload"] as? [String: Any])?["autoRenewProductId"] != nil)
    }

    /// decode reads headers and payloads with the same strict RFC 8259 reader as verify: JSON
    /// that Linux Foundation would take (a trailing comma, UTF-16) is an error, never echoed.
    @Test(.ownThread) func decodeRefusesWhatIsNotJSON() throws {
        func segment(_ bytes: [UInt8]) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let payload = segment(Array(#"{"notificationType":"TEST"}"#.utf8))
        let trailingComma = segment(Array(#"{"alg":"ES256","x5c":[],}"#.utf8))
        let utf16 = segment(Array(#"{"alg":"ES256"}"#.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let good = segment(Array(#"{"alg":"ES256"}"#.utf8))
        let lines = [trailingComma, utf16].map { #"{"signedPayload":"\#($0).\#(payload).c2ln"}"# }
            + [#"{"signedPayload":"\#(good).\#(segment(Array(#"{"a":1,}"#.utf8))).c2ln"}"#]
        let result = try CLI.run(["decode"], stdin: Data((lines.joined(separator: "\n") + "\n").utf8))
        #expect(result.exitCode == 1, CLI.describe(result))
        let objects = try CLI.jsonObjects(result.stdoutText)
        #expect(objects.count == 3)
        #expect(objects.allSatisfy { $0["error"] as? String == "malformed_jws" && $0["header"] == nil }, "\(objects)")
    }

    /// decode shows even what verify would reject (it verifies nothing), still "verified": false;
    /// undecodable lines get an error and exit 1.
    @Test(.ownThread) func decodeShowsForgedLinesAndReportsBrokenOnes() throws {
        let fixtures = try GeneratedFixtures.shared()
        let forged = try CLI.fileLines(fixtures.forged)
        // Another app's notification (validly signed, wrong bundle id) and alg "none".
        let input = Data((forged[2] + "\n" + forged[3] + "\nnot json\n").utf8)
        let result = try CLI.run(["decode"], stdin: input)
        #expect(result.exitCode == 1, CLI.describe(result))
        let objects = try CLI.jsonObjects(result.stdoutText)
        try #require(objects.count == 3)
        #expect(objects.allSatisfy { $0["verified"] as? Bool == false })
        let payload = objects[0]["payload"] as? [String: Any]
        #expect((payload?["data"] as? [String: Any])?["bundleId"] as? String == "com.attacker.app", "shown, unverified: \(objects[0])")
        #expect((objects[1]["header"] as? [String: Any])?["alg"] as? String == "none")
        #expect(objects[2]["error"] as? String == "malformed_json")
        #expect(objects[2]["line"] as? Int == 3)
    }

    @Test(.ownThread) func decodeReadsFiles() throws {
        let result = try CLI.run(["decode", CLI.realTransactions])
        #expect(result.exitCode == 0, CLI.describe(result))
        let objects = try CLI.jsonObjects(result.stdoutText)
        #expect(objects.count == (try CLI.fileLines(CLI.realTransactions).count))
        #expect(objects.allSatisfy { $0["kind"] as? String == "transaction" && $0["verified"] as? Bool == false })
    }

    @Test(.ownThread) func rootHelpListsEveryCommand() throws {
        let result = try CLI.run(["--help"])
        #expect(result.exitCode == 0, CLI.describe(result))
        for command in ["run", "lint", "verify", "decode", "fixtures", "components", "state", "entitlements", "dev-broker"] {
            #expect(result.stdoutText.contains("  \(command)"), "--help lists \(command): \(result.stdoutText)")
        }
        #expect(result.stdoutText.contains("Exit codes"))
        let help = try CLI.run(["help"])
        #expect(help.exitCode == 0)
        #expect(help.stdoutText.contains("verify"))
    }

    /// The names under a help text's SUBCOMMANDS: heading.
    func subcommands(in help: String) -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "SUBCOMMANDS:") else { return [] }
        return lines[(start + 1)...].prefix { !$0.isEmpty }
            .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    @Test("no command's help breaks an example line: each fits the 80 columns help is wrapped to", .ownThread)
    func helpExamplesAreNotWrapped() throws {
        var commands: [[String]] = subcommands(in: try CLI.run(["--help"]).stdoutText).map { [$0] }
        #expect(commands.count >= 15)
        var index = 0
        while index < commands.count {
            let command = commands[index]
            index += 1
            let help = try CLI.run(["help"] + command)
            #expect(help.exitCode == 0, "\(command): \(CLI.describe(help))")
            commands += subcommands(in: help.stdoutText).map { command + [$0] }
            // The discussion ends where USAGE begins. A wrapped example shows as an unindented
            // line right after an indented one (prose paragraphs are separated by blank lines).
            let text = help.stdoutText.components(separatedBy: "\nUSAGE:").first ?? ""
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            for (previous, line) in zip(lines, lines.dropFirst())
            where previous.hasPrefix("  ") && !line.isEmpty && !line.hasPrefix(" ") {
                Issue.record("signet help \(command.joined(separator: " ")): an example line is wrapped: '\(previous)' / '\(line)'")
            }
        }
        #expect(commands.contains(["dead-letters", "replay"]), "nested commands are checked too")
    }

    @Test(.ownThread) func helpRunExplainsTheCommand() throws {
        let result = try CLI.run(["help", "run"])
        #expect(result.exitCode == 0, CLI.describe(result))
        for text in ["--pipeline", "--summary-json", "SIGTERM", "SIGNET_BUNDLE_ID", "Pipelines/stdin.yaml"] {
            #expect(result.stdoutText.contains(text), "help run mentions \(text)")
        }
        let same = try CLI.run(["run", "--help"])
        #expect(same.exitCode == 0)
        #expect(same.stdoutText == result.stdoutText)
    }

    @Test(.ownThread, arguments: [
        ("verify", ["--root", "--environment", "--bundle-id", "--app-apple-id", "--jobs", "--max-line-bytes", "reason-codes"]),
        ("lint", ["--strict-env", "FILE:LINE:COLUMN"]),
        ("decode", ["WITHOUT", "verified"]),
        ("fixtures", ["--out", "--count", "root.pem", "forged.ndjson"]),
    ])
    func subcommandHelp(_ command: String, _ mentions: [String]) throws {
        let result = try CLI.run(["help", command])
        #expect(result.exitCode == 0, CLI.describe(result))
        for text in mentions {
            #expect(result.stdoutText.contains(text), "help \(command) mentions \(text)")
        }
    }

    @Test(.ownThread) func componentsListsEveryRegisteredType() throws {
        let result = try CLI.run(["components"])
        #expect(result.exitCode == 0, CLI.describe(result))
        let registry = Signet.makeRegistry()
        let text = result.stdoutText
        let sections = ["sources:", "stages:", "sinks:"].map { text.range(of: $0)?.lowerBound }
        try #require(sections.allSatisfy { $0 != nil }, "\(text)")
        let sources = text[sections[0]!..<sections[1]!], stages = text[sections[1]!..<sections[2]!], sinks = text[sections[2]!...]
        let registered: [(Substring, [String])] = [
            (sources, Array(registry.sources.keys)), (stages, Array(registry.stages.keys)), (sinks, Array(registry.sinks.keys)),
        ]
        for (section, names) in registered {
            #expect(!names.isEmpty)
            for name in names {
                #expect(section.contains("  \(name) "), "components lists \(name) in its section: \(text)")
            }
        }
        for name in ["stdin", "file", "kafka"] { #expect(sources.contains("  \(name) ")) }
        for name in ["decode", "verify", "dedupe", "transition", "fanout"] { #expect(stages.contains("  \(name) ")) }
        for name in ["stdout", "file", "kafka"] { #expect(sinks.contains("  \(name) ")) }
    }

    @Test(.ownThread) func versionPrintsTheLibraryVersion() throws {
        let result = try CLI.run(["--version"])
        #expect(result.exitCode == 0, CLI.describe(result))
        // A build from source knows no commit; scripts/package.sh passes it in.
        #expect(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "\(Signet.version) (commit unknown, built unknown)")
    }
}
