import Foundation
import Signet
import SignetTestSupport
import Testing

/// `signet run` with pipeline files written by the tests, and with the embedded default.
@Suite("signet run", .timeLimit(.minutes(10)))
struct RunPipelineTests {
    /// A decode + verify pipeline with the fixtures root; `source` is YAML for the source block.
    static func pipeline(source: String, root: String, deadLetter: String) -> String {
        """
        description: test pipeline (decode, verify, stdout, dead-letter file)
        source:
        \(source)
        stages:
          - type: decode
          - type: verify
            roots: \(root)
            environment: Sandbox
            bundle_id: \(GeneratedFixtures.bundleId)
            workers: 2
        sinks:
          out:
            type: stdout
        dead_letter:
          type: file
          path: \(deadLetter)
          format: json
        settings:
          batch_size: 16
        """
    }

    /// Input mixing genuine, forged and broken lines, and what each must become.
    struct Input {
        var data = Data()
        /// For every non-blank line: nil when it must pass, else the reason.
        var expected: [String?] = []
        /// Genuine lines' notificationUUIDs (nil for transactions), in order.
        var passedUUIDs: [String?] = []
        var nonBlankLineNumbers: [Int] = []
        private var lineNumber = 0

        mutating func add(_ bytes: [UInt8], _ reason: String?, uuid: String? = nil) {
            data.append(contentsOf: bytes)
            data.append(0x0A)
            lineNumber += 1
            expected.append(reason)
            nonBlankLineNumbers.append(lineNumber)
            if reason == nil { passedUUIDs.append(uuid) }
        }

        mutating func addBlank() {
            data.append(contentsOf: Array("  \n".utf8))
            lineNumber += 1
        }

        var rejectedByReason: [String: Int] {
            expected.compactMap { $0 }.reduce(into: [:]) { $0[$1, default: 0] += 1 }
        }
    }

    static func makeInput(_ fixtures: GeneratedFixtures) throws -> Input {
        var input = Input()
        let notifications = try CLI.fileLines(fixtures.notifications)
        let forged = try CLI.fileLines(fixtures.forged)
        let transactions = try CLI.fileLines(fixtures.transactions)
        let forgedReasons = [
            "invalid_signature", "invalid_certificate_chain", "bundle_id_mismatch", "unsupported_algorithm",
            "malformed_jws", "missing_signed_payload", "malformed_json",
        ]
        func uuid(_ line: String) throws -> String? {
            let jws = try CLI.signedPayload(ofLine: line)
            let payload = try #require(CLI.base64URLDecode(jws.split(separator: ".")[1]))
            return (try JSONSerialization.jsonObject(with: payload) as? [String: Any])?["notificationUUID"] as? String
        }
        for (index, line) in notifications.prefix(40).enumerated() {
            try input.add(Array(line.utf8), nil, uuid: uuid(line))
            if index % 6 == 0 {
                let bad = index / 6 % forged.count
                input.add(Array(forged[bad].utf8), forgedReasons[bad])
            }
            if index == 10 { input.addBlank() }
            if index == 11 { input.add([0xC3, 0x28, 0xFF], "invalid_utf8") }
            if index == 12 { input.add([UInt8](repeating: UInt8(ascii: "["), count: 100_000), "malformed_json") }
            if index == 13 {
                input.add(Array(#"{"signedPayload":""#.utf8) + [UInt8](repeating: UInt8(ascii: "A"), count: 2_000_000), "line_too_large")
            }
            if index == 14 { input.add(Array(#"{"signedPayload": 5}"#.utf8), "malformed_json") }
        }
        for line in transactions.prefix(3) { input.add(Array(line.utf8), nil) }
        return input
    }

    func check(
        result: SignetProcess.Result, input: Input, deadLetterPath: String, summaryPath: String, stream: String
    ) throws {
        #expect(result.exitCode == 0, "the run goes on past bad lines: \(CLI.describe(result))")
        // Verified documents, in input order.
        let documents = try CLI.jsonObjects(result.stdoutText)
        #expect(documents.count == input.passedUUIDs.count, CLI.describe(result))
        let uuids = documents.map { $0["notificationUUID"] as? String }
        #expect(uuids == input.passedUUIDs, "verified documents in input order")
        for document in documents {
            #expect(document["environment"] as? String == "Sandbox")
            #expect(document["bundleId"] as? String == GeneratedFixtures.bundleId)
            if document["kind"] as? String == "notification" {
                let payload = document["payload"] as? [String: Any]
                #expect(payload?["notificationUUID"] as? String == document["notificationUUID"] as? String)
            }
        }
        #expect(documents.filter { $0["kind"] as? String == "transaction" }.count == 3)

        // Dead letters, in input order, each naming its line.
        let deadText = try String(contentsOfFile: deadLetterPath, encoding: .utf8)
        let dead = try CLI.jsonObjects(deadText)
        let rejectedLines = zip(input.expected, input.nonBlankLineNumbers).filter { $0.0 != nil }
        try #require(dead.count == rejectedLines.count, "dead letters: \(deadText.prefix(2000))")
        for (record, (reason, line)) in zip(dead, rejectedLines) {
            #expect(record["reason"] as? String == reason, "\(record)")
            let source = record["source"] as? [String: Any]
            #expect(source?["line"] as? Int == line, "\(record)")
            #expect(source?["stream"] as? String == stream)
            #expect((record["detail"] as? String)?.isEmpty == false)
            #expect(record["stage"] is String)
        }
        let utf8Record = dead.first { $0["reason"] as? String == "invalid_utf8" }
        #expect(utf8Record?["inputBase64"] as? String == Data([0xC3, 0x28, 0xFF]).base64EncodedString())
        #expect(dead.first { $0["reason"] as? String == "line_too_large" }?["stage"] as? String == "source")

        // The summary file.
        let summaryData = try Data(contentsOf: URL(fileURLWithPath: summaryPath))
        let summary = try #require(try JSONSerialization.jsonObject(with: summaryData) as? [String: Any])
        #expect(summary["read"] as? Int == input.expected.count, "\(summary)")
        #expect(summary["passed"] as? Int == input.passedUUIDs.count, "\(summary)")
        #expect(summary["rejected"] as? Int == rejectedLines.count, "\(summary)")
        #expect(summary["dropped"] as? Int == 0)
        #expect(summary["delivered"] as? Int == input.passedUUIDs.count)
        #expect((summary["deliveredBySink"] as? [String: Int]) == ["out": input.passedUUIDs.count], "\(summary)")
        #expect((summary["rejectedByReason"] as? [String: Int]) == input.rejectedByReason, "\(summary)")
        // And on stderr.
        #expect(result.stderr.contains("\(input.expected.count) read, \(input.passedUUIDs.count) passed, \(rejectedLines.count) rejected"),
                CLI.describe(result))
    }

    @Test(.ownThread) func filePipelineDeliversVerifiedDocumentsAndDeadLetters() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory(prefix: "signet-cli-run")
        defer { dir.remove() }
        let input = try Self.makeInput(fixtures)
        let inputPath = try CLI.write(input.data, to: dir, name: "input.ndjson")
        let deadLetter = dir.path("dl/dead-letter.ndjson")
        try FileManager.default.createDirectory(atPath: dir.path("dl"), withIntermediateDirectories: true)
        let yaml = Self.pipeline(source: "  type: file\n  path: \(inputPath)", root: fixtures.root, deadLetter: deadLetter)
        let pipeline = try CLI.write(Data(yaml.utf8), to: dir, name: "pipeline.yaml")
        let summary = dir.path("summary.json")
        let result = try CLI.run(["run", "--pipeline", pipeline, "--summary-json", summary], currentDirectory: dir.url)
        try check(result: result, input: input, deadLetterPath: deadLetter, summaryPath: summary, stream: inputPath)
    }

    @Test(.ownThread) func stdinPipelineDeliversVerifiedDocumentsAndDeadLetters() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory(prefix: "signet-cli-run")
        defer { dir.remove() }
        let input = try Self.makeInput(fixtures)
        let deadLetter = dir.path("dead-letter.ndjson")
        let yaml = Self.pipeline(source: "  type: stdin", root: fixtures.root, deadLetter: deadLetter)
        let pipeline = try CLI.write(Data(yaml.utf8), to: dir, name: "pipeline.yaml")
        let summary = dir.path("summary.json")
        let result = try CLI.run(["run", "--pipeline", pipeline, "--summary-json", summary], stdin: input.data, currentDirectory: dir.url)
        try check(result: result, input: input, deadLetterPath: deadLetter, summaryPath: summary, stream: "stdin")
    }

    @Test(.ownThread, .enabled(if: SchemaValidator.unavailableReason == nil, "needs python3 with the jsonschema module (apt install python3-jsonschema)"))
    func outputsMatchTheirJSONSchemas() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory(prefix: "signet-cli-schema")
        defer { dir.remove() }
        var input = try Self.makeInput(fixtures)
        // Real Apple payloads too (with Apple's root), for their richer documents.
        let realDir = try TemporaryDirectory(prefix: "signet-cli-schema-real")
        defer { realDir.remove() }
        input.add(Array("{\"signedPayload\": \"x\"}".utf8), "malformed_jws")
        let inputPath = try CLI.write(input.data, to: dir, name: "input.ndjson")
        let deadLetter = dir.path("dead-letter.ndjson")
        let yaml = Self.pipeline(source: "  type: file\n  path: \(inputPath)", root: fixtures.root, deadLetter: deadLetter)
        let pipeline = try CLI.write(Data(yaml.utf8), to: dir, name: "pipeline.yaml")
        let result = try CLI.run(["run", "--pipeline", pipeline], currentDirectory: dir.url)
        #expect(result.exitCode == 0, CLI.describe(result))
        let out = try CLI.write(result.stdout, to: dir, name: "out.ndjson")
        #expect(result.lines.count == input.passedUUIDs.count)

        // Real notifications (Apple's root), every kind of document.
        let realYAML = """
            source: { type: stdin }
            stages:
              - type: decode
              - type: verify
                environment: Sandbox
                bundle_id: com.loki-project.loki-messenger
            sinks: { out: { type: stdout } }
            dead_letter: { type: file, path: \(realDir.path("dead.ndjson")) }
            """
        let realPipeline = try CLI.write(Data(realYAML.utf8), to: realDir, name: "real.yaml")
        var realInput = try Data(contentsOf: URL(fileURLWithPath: CLI.realNotifications))
        realInput.append(try Data(contentsOf: URL(fileURLWithPath: CLI.realRenewalInfos)))
        let real = try CLI.run(["run", "--pipeline", realPipeline], stdin: realInput, currentDirectory: realDir.url)
        #expect(real.exitCode == 0, CLI.describe(real))
        let realOut = try CLI.write(real.stdout, to: realDir, name: "out.ndjson")
        let realDocuments = try CLI.jsonObjects(real.stdoutText)
        #expect(Set(realDocuments.compactMap { $0["kind"] as? String }) == ["notification", "renewalInfo"])

        let schemas = FixturePaths.packageRoot.appendingPathComponent("Schemas")
        let documentSchema = schemas.appendingPathComponent("decoded-notification.schema.json").path
        let deadSchema = schemas.appendingPathComponent("dead-letter.schema.json").path
        for (file, schema) in [(out, documentSchema), (realOut, documentSchema), (deadLetter, deadSchema), (realDir.path("dead.ndjson"), deadSchema)] {
            let (status, output) = try SchemaValidator.validate(ndjson: file, schema: schema)
            #expect(status == 0, "\(file) against \(schema):\n\(output)")
            #expect(output.contains("VALIDATED "), "\(output)")
            #expect(!output.contains("VALIDATED 0\n"), "nothing was validated in \(file)")
        }
    }

    // MARK: - The embedded default pipeline

    @Test(.ownThread) func embeddedDefaultEqualsPipelinesStdinYAML() throws {
        let file = FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml").path
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(Signet.defaultPipelineYAML + "\n" == text,
                "Sources/Signet/DefaultPipeline.swift is out of date: run scripts/embed-default-pipeline.sh")
    }

    @Test(.ownThread) func defaultPipelineWithoutBundleIdIsAConfigurationError() throws {
        // Positions refer to the embedded text (what runs), which equals Pipelines/stdin.yaml.
        let lines = Signet.defaultPipelineYAML.split(separator: "\n", omittingEmptySubsequences: false)
        let lineIndex = try #require(lines.firstIndex { $0.contains("${SIGNET_BUNDLE_ID}") && !$0.hasPrefix("#") })
        let column = try #require(lines[lineIndex].range(of: "${SIGNET_BUNDLE_ID}")).lowerBound.utf16Offset(in: lines[lineIndex]) + 1
        let dir = try TemporaryDirectory(prefix: "signet-cli-default")
        defer { dir.remove() }
        let fixtures = try GeneratedFixtures.shared()
        for environment in [[:], ["SIGNET_ENVIRONMENT": "Sandbox", "SIGNET_ROOT_CERTS": fixtures.root, "SIGNET_DATA_DIR": dir.path("data")]] {
            let result = try CLI.run(
                ["run"], stdin: try Data(contentsOf: URL(fileURLWithPath: fixtures.notifications)),
                environment: environment, currentDirectory: dir.url)
            #expect(result.exitCode == 2, CLI.describe(result))
            #expect(result.stdout.isEmpty)
            let message = result.stderr.split(separator: "\n").first { $0.contains("SIGNET_BUNDLE_ID") }
            #expect(message != nil, "stderr names SIGNET_BUNDLE_ID: \(result.stderr)")
            #expect(message?.contains("\(Signet.defaultPipelineName):\(lineIndex + 1):\(column)") == true,
                    "the message gives file:line:column: \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("signet-data/dead-letter.ndjson")))
    }

    /// With the variables set the default pipeline runs and keeps going past bad lines (exit codes only:
    /// the default's stages will change).
    @Test(.ownThread) func defaultPipelineRunsWithFixturesEnvironment() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory(prefix: "signet-cli-default")
        defer { dir.remove() }
        var input = try Data(contentsOf: URL(fileURLWithPath: fixtures.notifications))
        input.append(try Data(contentsOf: URL(fileURLWithPath: fixtures.forged)))
        let summary = dir.path("summary.json")
        let result = try CLI.run(
            ["run", "--summary-json", summary], stdin: input,
            environment: [
                "SIGNET_ROOT_CERTS": fixtures.root, "SIGNET_ENVIRONMENT": "Sandbox",
                "SIGNET_BUNDLE_ID": GeneratedFixtures.bundleId, "SIGNET_DATA_DIR": dir.path("data"),
            ], currentDirectory: dir.url)
        #expect(result.exitCode == 0, CLI.describe(result))
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: summary))) as? [String: Any]
        let forgedCount = try CLI.fileLines(fixtures.forged).count
        #expect(object?["read"] as? Int == GeneratedFixtures.count + forgedCount, "\(String(describing: object))")
        #expect((object?["rejected"] as? Int ?? 0) >= forgedCount, "\(String(describing: object))")
        #expect(FileManager.default.fileExists(atPath: dir.path("data/dead-letter.ndjson")))
    }

    @Test(.ownThread) func runUsageAndConfigurationErrors() throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-run-errors")
        defer { dir.remove() }
        // Regression: a missing pipeline file once went unnamed in the error.
        let missing = try CLI.run(["run", "--pipeline", dir.path("nope.yaml")], currentDirectory: dir.url)
        #expect(missing.exitCode == 2, CLI.describe(missing))
        #expect(missing.stderr.contains("nope.yaml"), "the message names the missing file: \(missing.stderr)")
        let badYAML = try CLI.write(Data("source:\n  type: stdn\n".utf8), to: dir, name: "bad.yaml")
        let bad = try CLI.run(["run", "--pipeline", badYAML], currentDirectory: dir.url)
        #expect(bad.exitCode == 2, CLI.describe(bad))
        #expect(bad.stderr.contains("\(badYAML):2:9: error:"), CLI.describe(bad))
        let flag = try CLI.run(["run", "--no-such-flag"], currentDirectory: dir.url)
        #expect(flag.exitCode == 2, CLI.describe(flag))
    }
}
