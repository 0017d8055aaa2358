import AppStoreModels
import Foundation
import SignetFixtures
import SignetOpenSSL
import SignetTestSupport
import Synchronization
import Testing

/// Issue 12 through the real binary: the whole extreme-number corpus (trusted and attacker
/// signers) through `signet verify`, `signet decode` and `signet run` on stdin, one process
/// per command. Each must end with an exit code (never a signal), account for every line,
/// and name a known reason for every rejection. One corpus, built once, and one command at a
/// time: the corpus is large and `signet verify` uses every core.
@Suite("Extreme numbers through the signet CLI", .serialized, .timeLimit(.minutes(10)))
struct ExtremeNumberCLITests {
    static let bundleId = "com.example.signet"

    /// The corpus file and the root that trusts half of it.
    struct Input: Sendable {
        let directory: URL
        let lines: [ExtremeNumberCorpus.Line]
        let trustedCount: Int
        var corpusPath: String { path("corpus.ndjson") }
        var rootPath: String { path("root.der") }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        var corpusData: Data { Data(lines.flatMap { $0.bytes + [UInt8(ascii: "\n")] }) }
    }

    /// The shared input, removed when the test process exits.
    static let shared: Result<Input, InputFailure> = {
        do {
            let input = try makeInput()
            let path = input.directory.path
            cleanupPath.withLock { $0 = path }
            atexit { if let path = ExtremeNumberCLITests.cleanupPath.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) } }
            return .success(input)
        } catch {
            return .failure(InputFailure(description: "cannot build the corpus: \(error)"))
        }
    }()
    private static let cleanupPath = Mutex<String?>(nil)

    struct InputFailure: Error, CustomStringConvertible { var description: String }

    static func makeInput() throws -> Input {
        let dir = try TemporaryDirectory(prefix: "signet-extreme")
        let trusted = try TestPKI()
        let attacker = try TestPKI(name: "Attacker")
        let corpus = ExtremeNumberCorpus(bundleId: bundleId, now: Int64(Date().timeIntervalSince1970) * 1000 - 1000)
        let good = try corpus.lines(signedBy: trusted.signer)
        let bad = try corpus.lines(signedBy: attacker.signer)
        let input = Input(directory: dir.url, lines: good + bad, trustedCount: good.count)
        try Data(trusted.root.derEncoded).write(to: URL(fileURLWithPath: input.rootPath))
        try input.corpusData.write(to: URL(fileURLWithPath: input.corpusPath))
        return input
    }

    static func objects(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    static func describe(_ result: SignetProcess.Result) -> Comment {
        "exit \(result.exitCode); stderr: \(result.stderr.suffix(2000))"
    }

    @Test("signet verify: one verdict per line, attacker lines all rejected, reasons known, exit 1")
    func verify() async throws {
        let input = try Self.shared.get()
        let result = try await SignetProcess.output(
            ["verify", "--root", input.rootPath, "--environment", "Sandbox", "--bundle-id", Self.bundleId,
             "--app-apple-id", "4242", input.corpusPath],
            timeout: 480)
        // 1: some lines were rejected. A trap would be a signal (exit 132/133/134 or -1).
        #expect(result.exitCode == 1, Self.describe(result))
        let verdicts = try Self.objects(result.stdoutText)
        try #require(verdicts.count == input.lines.count, Self.describe(result))
        var accepted = 0
        for (index, verdict) in verdicts.enumerated() {
            let line = input.lines[index]
            if verdict["ok"] as? Bool == true {
                accepted += 1
                #expect(index < input.trustedCount, "attacker line accepted: \(line)")
            } else {
                let reason = verdict["reason"] as? String ?? "<none>"
                #expect(KnownReasonCodes.all.contains(reason), "\(line): \(verdict)")
            }
            if line.value == nil, index < input.trustedCount {
                #expect(verdict["ok"] as? Bool == true, "base line rejected: \(line) \(verdict)")
            }
        }
        #expect(accepted > 0 && accepted < input.trustedCount)
    }

    @Test("signet decode: one document per line, decoded or refused with a known reason, exit 0 or 1")
    func decode() async throws {
        let input = try Self.shared.get()
        let result = try await SignetProcess.output(["decode"], stdin: input.corpusData, timeout: 480)
        #expect(result.exitCode == 0 || result.exitCode == 1, Self.describe(result))
        // decode echoes payloads verbatim, and `1e999` is valid RFC 8259 JSON that Foundation's
        // reader refuses: read the output with Signet's strict reader.
        let documents = try result.stdoutText.split(separator: "\n").map { try JSONElement.parse(Array($0.utf8)) }
        try #require(documents.count == input.lines.count, Self.describe(result))
        var decoded = 0
        for (document, line) in zip(documents, input.lines) {
            if let error = document["error"]?.stringValue {
                #expect(KnownReasonCodes.all.contains(error), "\(line): \(document)")
                #expect(line.value != nil, "base line not decoded: \(line) \(document)")
            } else {
                decoded += 1
                #expect(document["payload"]?.isObject == true, "\(line)")
            }
        }
        #expect(decoded > documents.count / 2, "decoded \(decoded) of \(documents.count)")
    }

    @Test("signet run on stdin (default pipeline, test root trusted): every line passed or dead-lettered with a known reason")
    func runOnStdin() async throws {
        let input = try Self.shared.get()
        let data = input.path("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let summaryPath = input.path("summary.json")
        let result = try await SignetProcess.output(
            ["run", "--summary-json", summaryPath], stdin: input.corpusData,
            environment: [
                "SIGNET_ROOT_CERTS": input.rootPath, "SIGNET_ENVIRONMENT": "Sandbox", "SIGNET_BUNDLE_ID": Self.bundleId,
                "SIGNET_APP_APPLE_ID": "4242", "SIGNET_DATA_DIR": data,
            ],
            currentDirectory: input.directory, timeout: 480)
        #expect(result.exitCode == 0, "the run goes on past bad lines: \(Self.describe(result))")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: summaryPath))) as? [String: Any])
        let read = summary["read"] as? Int ?? -1
        let rejected = summary["rejected"] as? Int ?? -1
        let passed = summary["passed"] as? Int ?? -1
        let dropped = summary["dropped"] as? Int ?? -1
        #expect(read == input.lines.count, "\(summary)")
        #expect(passed + rejected + dropped == read, "\(summary)")
        // Every attacker line is among the rejected; some trusted lines pass.
        #expect(rejected >= input.lines.count - input.trustedCount, "\(summary)")
        #expect(passed > 0, "\(summary)")
        let dead = try Self.objects(String(contentsOfFile: data + "/dead-letter.ndjson", encoding: .utf8))
        #expect(dead.count == rejected)
        for record in dead {
            let reason = record["reason"] as? String ?? "<none>"
            #expect(KnownReasonCodes.all.contains(reason), "\(record["reason"] ?? "") \(record["detail"] ?? "")")
        }
        for (reason, count) in summary["rejectedByReason"] as? [String: Int] ?? [:] {
            #expect(KnownReasonCodes.all.contains(reason), "\(reason): \(count)")
        }
    }
}
