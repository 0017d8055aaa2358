import Foundation
import SignetTestSupport
import Testing

/// The real binary in pipes and on bad paths (issue 8 §5), run through bash as a user would.
@Suite("pipes, paths and the data-dir lock")
struct PipesAndPathsTests {
    /// The SIGNET_* settings of the shared fixtures, for the default pipeline.
    private func settings(dataDir: String) throws -> [String: String] {
        let fixtures = try GeneratedFixtures.shared()
        return [
            "SIGNET_ROOT_CERTS": fixtures.root, "SIGNET_ENVIRONMENT": "Sandbox",
            "SIGNET_BUNDLE_ID": GeneratedFixtures.bundleId, "SIGNET_DATA_DIR": dataDir,
        ]
    }

    @Test("signet run | head -1 stops at once on the closed pipe, exit 1, one clear line", .ownThread)
    func runIntoClosedPipe() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var env = try settings(dataDir: dir.path("data"))
        env["INPUT"] = fixtures.notifications
        // A sink retry timeout of minutes: only treating EPIPE as permanent ends the run before the test's limit.
        let result = try SignetProcess.shell(
            #""$SIGNET" run < "$INPUT" | head -1 > /dev/null; echo "status=${PIPESTATUS[0]}""#, environment: env, timeout: 60)
        #expect(result.stdoutText.contains("status=1"), CLI.describe(result))
        // Besides the settings `verify` and the store log at start (docs/operations.md), one line.
        let lines = result.stderr.split(separator: "\n").filter { !$0.contains("] verify: environment ") && !$0.contains("] store default (") }
        #expect(lines.count == 1 && lines[0].hasPrefix("signet: stdout is closed"), CLI.describe(result))
    }

    @Test("signet verify FILE | head -2 and decode | head -1 exit quietly", .ownThread)
    func verifyIntoClosedPipe() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let copy = try CLI.write(Data(contentsOf: URL(fileURLWithPath: fixtures.notifications)), to: dir, name: "in.ndjson")
        let result = try SignetProcess.shell(
            // Fifty copies of the input: more output than a pipe buffer holds, so the writer meets the closed pipe.
            #"for _ in $(seq 50); do cat "$INPUT"; done > "$INPUT.many"; "#
                + #""$SIGNET" verify --root "$ROOT" "$INPUT.many" | head -2 > /dev/null; echo "verify=${PIPESTATUS[0]}"; "#
                + #""$SIGNET" decode "$INPUT.many" | head -1 > /dev/null; echo "decode=${PIPESTATUS[0]}""#,
            environment: ["ROOT": fixtures.root, "INPUT": copy])
        #expect(result.stdoutText.contains("verify=141"), CLI.describe(result))
        #expect(result.stdoutText.contains("decode=141"), CLI.describe(result))
        #expect(!result.stderr.contains("Fatal error"), CLI.describe(result))
        #expect(result.stderr.isEmpty, CLI.describe(result))
    }

    @Test("a second writer on one data dir exits 2 naming the first one's pid; a reader stays allowed", .ownThread)
    func dataDirLock() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var env = try settings(dataDir: dir.path("data"))
        env["INPUT"] = try GeneratedFixtures.shared().notifications
        // The first run holds its stdin open (a FIFO nobody writes to yet), so it keeps the lock
        // until the script feeds and closes it.
        let script = #"""
            mkfifo "$SIGNET_DATA_DIR.in"
            "$SIGNET" run < "$SIGNET_DATA_DIR.in" > /dev/null 2>&1 &
            first=$!
            exec 3> "$SIGNET_DATA_DIR.in"
            for _ in $(seq 1 600); do [ -s "$SIGNET_DATA_DIR/signet.sqlite.lock" ] && [ -e "$SIGNET_DATA_DIR/signet.sqlite" ] && break; sleep 0.05; done
            echo "first=$first"
            "$SIGNET" run < "$INPUT" > /dev/null 2> "$SIGNET_DATA_DIR.err"; echo "second=$?"
            cat "$SIGNET_DATA_DIR.err"
            "$SIGNET" entitlements --original-transaction-id 1 > /dev/null; echo "reader=$?"
            cat "$INPUT" >&3; exec 3>&-
            wait $first; echo "firstexit=$?"
            """#
        let result = try SignetProcess.shell(script, environment: env, timeout: 90)
        let out = result.stdoutText
        let pid = try #require(out.split(separator: "\n").first { $0.hasPrefix("first=") }?.dropFirst(6), CLI.describe(result))
        #expect(out.contains("second=2"), CLI.describe(result))
        #expect(out.contains("in use by pid \(pid)"), CLI.describe(result))
        #expect(out.contains("reader=0"), CLI.describe(result))
        #expect(out.contains("firstexit=0"), CLI.describe(result))
    }

    @Test("a file, a missing parent or a bad path as SIGNET_DATA_DIR: one usage line, exit 2, before the run; --summary-json says why", .ownThread)
    func badDataDir() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir.path("file")))
        for (path, expected) in [(dir.path("file"), "is a file, not a directory"), (dir.path("none/data"), "does not exist")] {
            let summary = dir.path("summary.json")
            let result = try CLI.run(["run", "--summary-json", summary], stdin: Data(), environment: try settings(dataDir: path))
            #expect(result.exitCode == 2, CLI.describe(result))
            #expect(result.stderr.split(separator: "\n").count == 1, CLI.describe(result))
            #expect(result.stderr.contains(expected), CLI.describe(result))
            let written = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: summary))) as? [String: Any]
            #expect((written?["failure"] as? String)?.contains(expected) == true, "\(String(describing: written))")
            #expect(written?["read"] as? Int == 0)
        }
    }

    @Test("signet fixtures --out D --stdout leaves D's files as they were", .ownThread)
    func fixturesStdoutKeepsFiles() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path("fx")
        #expect(try CLI.run(["fixtures", "--out", out, "--count", "5"]).exitCode == 0)
        let names = ["notifications.ndjson", "transactions.ndjson", "forged.ndjson", "root.pem"]
        let before = try names.map { try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0)) }
        let streamed = try CLI.run(["fixtures", "--out", out, "--count", "3", "--stdout"])
        #expect(streamed.exitCode == 0, CLI.describe(streamed))
        #expect(streamed.lines.count == 3)
        let after = try names.map { try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0)) }
        #expect(before == after)
        #expect(try CLI.fileLines(out + "/notifications.ndjson").count == 5)
    }

    @Test("signet fixtures --type: only that type (or TYPE/SUBTYPE), signed and accepted by the pipeline; an unknown type is a usage error", .ownThread)
    func fixturesOfOneType() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path("fx")
        let one = try CLI.run(["fixtures", "--out", out, "--now", "--count", "1", "--stdout", "--type", "DID_FAIL_TO_RENEW/GRACE_PERIOD"])
        #expect(one.exitCode == 0, CLI.describe(one))
        #expect(one.lines.count == 1)
        let several = try CLI.run(["fixtures", "--out", out, "--now", "--count", "6", "--stdout", "--type", "REFUND", "--type", "TEST"])
        #expect(several.lines.count == 6)
        let environment = try FixturesEnvironment.read(out).merging(["SIGNET_DATA_DIR": out + "/data"]) { $1 }
        // Verified, they are what was asked for; two calls with --now never repeat an id.
        let decoded = try CLI.run(["verify"], stdin: one.stdout + several.stdout, environment: environment)
        #expect(decoded.exitCode == 0, CLI.describe(decoded))
        let verdicts = try decoded.jsonLines()
        let kinds = verdicts.map { [$0["notificationType"] as? String, $0["subtype"] as? String].compactMap { $0 }.joined(separator: "/") }
        #expect(Set(verdicts.compactMap { $0["notificationUUID"] as? String }).count == 7)
        #expect(kinds.first == "DID_FAIL_TO_RENEW/GRACE_PERIOD", CLI.describe(decoded))
        #expect(Set(kinds.dropFirst()) == ["REFUND", "TEST"], CLI.describe(decoded))
        let listed = try CLI.run(["fixtures", "--list-types"])
        #expect(listed.lines.count > 30 && listed.lines.contains("REFUND_REVERSED") && listed.lines.contains("SUBSCRIBED/INITIAL_BUY"))
        let unknown = try CLI.run(["fixtures", "--out", out, "--type", "REFUNDED"])
        #expect(unknown.exitCode == 2 && unknown.stderr.contains("--list-types"), CLI.describe(unknown))
    }

    @Test("signet fixtures --now dates the samples just before now: they verify, and subscriptions are entitled now (without it, none is)", .ownThread)
    func fixturesNow() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        func entitledPurchases(_ extra: [String]) throws -> (purchases: Int, entitled: Int) {
            let out = dir.path("fx\(extra.count)")
            #expect(try CLI.run(["fixtures", "--out", out, "--count", "30"] + extra).exitCode == 0)
            let environment = try FixturesEnvironment.read(out).merging(["SIGNET_DATA_DIR": out + "/data"]) { $1 }
            let run = try CLI.run(["run"], stdin: try Data(contentsOf: URL(fileURLWithPath: out + "/notifications.ndjson")), environment: environment)
            #expect(run.exitCode == 0, CLI.describe(run))
            #expect(run.stderr.contains("30 read, 30 passed, 0 rejected"), CLI.describe(run))
            let purchases = Set(try run.jsonLines().compactMap { $0["originalTransactionId"] as? String })
            var entitled = 0
            for purchase in purchases {
                let answer = try CLI.run(["entitlements", "--original-transaction-id", purchase], environment: environment)
                let objects = try JSONSerialization.jsonObject(with: answer.stdout) as? [[String: Any]] ?? []
                entitled += objects.filter { $0["entitled"] as? Bool == true }.count
            }
            return (purchases.count, entitled)
        }
        let current = try entitledPurchases(["--now"])
        #expect(current.purchases > 10)
        // Every notification type appears, so some purchases end (expired, refunded); most are current.
        #expect(current.entitled * 2 > current.purchases, "\(current)")
        #expect(try entitledPurchases([]).entitled == 0, "the default samples are dated early 2025")
    }

    @Test("signet verify takes SIGNET_ROOT_CERTS and the other SIGNET_* settings like signet run", .ownThread)
    func verifyReadsSettings() throws {
        let fixtures = try GeneratedFixtures.shared()
        let trusted = try CLI.run(["verify", fixtures.notifications], environment: try settings(dataDir: "unused"))
        #expect(trusted.exitCode == 0, CLI.describe(trusted))
        let builtInRoot = try CLI.run(["verify", fixtures.notifications])
        #expect(builtInRoot.exitCode == 1)
        var otherApp = try settings(dataDir: "unused")
        otherApp["SIGNET_BUNDLE_ID"] = "com.example.other"
        let wrongBundle = try CLI.run(["verify", fixtures.notifications], environment: otherApp)
        #expect(wrongBundle.exitCode == 1)
        #expect(try wrongBundle.jsonLines().allSatisfy { $0["ok"] as? Bool == false })
        // A flag still wins over the variable.
        let flag = try CLI.run(["verify", "--bundle-id", GeneratedFixtures.bundleId, fixtures.notifications], environment: otherApp)
        #expect(flag.exitCode == 0, CLI.describe(flag))
    }

    @Test("a run that rejects everything warns with the top reason; --fail-on-reject-ratio exits 1", .ownThread)
    func allRejected() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let env = try settings(dataDir: dir.path("data"))
        let garbage = Data("not json\nnot json either\n{}\n".utf8)
        let warned = try CLI.run(["run"], stdin: garbage, environment: env)
        #expect(warned.exitCode == 0, CLI.describe(warned))
        #expect(warned.stderr.contains("warning: every record (3) was rejected; top reason: "), CLI.describe(warned))
        let failed = try CLI.run(["run", "--fail-on-reject-ratio", "0.5"], stdin: garbage, environment: env)
        #expect(failed.exitCode == 1, CLI.describe(failed))
        #expect(failed.stderr.contains("more than --fail-on-reject-ratio 0.5"), CLI.describe(failed))
        let good = try Data(contentsOf: URL(fileURLWithPath: fixtures.notifications))
        let passed = try CLI.run(["run", "--fail-on-reject-ratio", "0.5"], stdin: good, environment: try settings(dataDir: dir.path("data2")))
        #expect(passed.exitCode == 0, CLI.describe(passed))
        #expect(!passed.stderr.contains("every record"), CLI.describe(passed))
    }

    @Test("a full disk under a file sink: one line naming the path, the reason in the summary, exit 1", .ownThread)
    func fullDisk() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fixtures = try GeneratedFixtures.shared()
        let pipeline = """
            source: { type: stdin }
            stages:
              - { type: decode }
              - { type: verify, roots: \(fixtures.root), environment: Sandbox, bundle_id: \(GeneratedFixtures.bundleId) }
            sinks:
              out: { type: file, path: /dev/full }
            dead_letter: { type: file, path: \(dir.path("dead.ndjson")) }
            settings: { sink_retry_timeout: 1s }
            """
        let file = try CLI.write(Data(pipeline.utf8), to: dir, name: "full.yaml")
        let input = try Data(contentsOf: URL(fileURLWithPath: fixtures.notifications))
        let summary = dir.path("summary.json")
        let result = try CLI.run(["run", "--pipeline", file, "--summary-json", summary], stdin: input)
        #expect(result.exitCode == 1, CLI.describe(result))
        #expect(result.stderr.contains("signet: no space left on device writing /dev/full"), CLI.describe(result))
        #expect(!result.stderr.contains("Error Domain"), CLI.describe(result))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: summary))) as? [String: Any])
        #expect((object["failure"] as? String)?.contains("no space left on device") == true)
    }

    @Test("dead-letter records carry an id that is the same on every re-run of the same input", .ownThread)
    func stableDeadLetterIds() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let garbage = Data("not json\n{}\nnot json\n".utf8)
        for _ in 0..<2 {
            #expect(try CLI.run(["run"], stdin: garbage, environment: try settings(dataDir: dir.path("data"))).exitCode == 0)
        }
        let records = try CLI.jsonObjects(String(contentsOfFile: dir.path("data/dead-letter.ndjson"), encoding: .utf8))
        let ids = records.compactMap { $0["id"] as? String }
        #expect(ids.count == 6)
        // Lines 1 and 3 are the same bytes with the same reason: one id; a re-run repeats all three.
        #expect(ids[0] == ids[2] && ids[0] != ids[1])
        #expect(Array(ids[0..<3]) == Array(ids[3..<6]))
        #expect(ids.allSatisfy { $0.count == 32 })
    }

    @Test("entitlements and state show read a read-only copy of the data dir, leave no side files, and say asOf", .ownThread)
    func readOnlyCopy() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let run = try CLI.run(
            ["run"], stdin: try Data(contentsOf: URL(fileURLWithPath: fixtures.notifications)),
            environment: try settings(dataDir: dir.path("data")))
        #expect(run.exitCode == 0, CLI.describe(run))
        let event = try #require(try run.jsonLines().first)
        let id = try #require(event["originalTransactionId"] as? String)
        let result = try queryReadOnlyCopy(of: dir.path("data"), in: dir, id: id)
        if result.stdoutText.contains("nomount") { return }  // no mount permission here: nothing to check
        #expect(!result.stdoutText.contains("writable"), CLI.describe(result))
        #expect(result.stdoutText.contains("entitlements=0"), CLI.describe(result))
        #expect(result.stdoutText.contains("state=0"), CLI.describe(result))
        #expect(!result.stdoutText.contains("-wal") && !result.stdoutText.contains("-shm"), CLI.describe(result))
        let entitlements = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.path("out.entitlements")))) as? [[String: Any]])
        #expect(entitlements.count == 1)
        #expect((entitlements.first?["asOf"] as? [String: Any])?["at"] is Int)
        let snapshot = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.path("out.state")))) as? [String: Any])
        #expect(snapshot["originalTransactionId"] as? String == id)
        #expect(((snapshot["asOf"] as? [String: Any])?["meaning"] as? String)?.contains("stored snapshot") == true)
    }

    @Test("a read-only copy taken while a writer had commits in its WAL (killed) shows them", .ownThread)
    func readOnlyCopyWithAWAL() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // A writer killed after its first commits: they are in the WAL, not yet in the main file.
        let writer = try ChildProcess.signet(["run"], environment: try settings(dataDir: dir.path("data")))
        defer { writer.stop() }
        try writer.write(try Data(contentsOf: URL(fileURLWithPath: fixtures.notifications)))
        #expect(writer.blockingWaitUntil(timeout: .seconds(60)) { writer.stdoutLineCount >= 5 }, "\(writer.stderrTail())")
        writer.send(SIGKILL)
        _ = writer.blockingExit(within: .seconds(10))
        let wal = dir.path("data/signet.sqlite-wal")
        let walSize = (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? NSNumber)?.intValue ?? 0
        try #require(walSize > 0, "the killed writer left no WAL")
        let event = try #require(try CLI.jsonObjects(writer.stdoutText).first)
        let id = try #require(event["originalTransactionId"] as? String)

        let result = try queryReadOnlyCopy(of: dir.path("data"), in: dir, id: id)
        if result.stdoutText.contains("nomount") { return }  // no mount permission here: nothing to check
        #expect(!result.stdoutText.contains("writable"), CLI.describe(result))
        // Reading the main file alone (`immutable`) found no tables: they were only in the WAL.
        #expect(result.stdoutText.contains("entitlements=0"), CLI.describe(result))
        #expect(result.stdoutText.contains("state=0"), CLI.describe(result))
        let snapshot = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.path("out.state")))) as? [String: Any])
        #expect(snapshot["originalTransactionId"] as? String == id)
    }

    /// Copies the data dir `data` to a read-only place and runs `entitlements` and `state show`
    /// for `id` there (printing `entitlements=STATUS`, `state=STATUS`, the copy's files); their
    /// JSON in `out.entitlements`, `out.state`. Prints "nomount" where that cannot be arranged.
    func queryReadOnlyCopy(of data: String, in dir: TemporaryDirectory, id: String) throws -> SignetProcess.Result {
        // Root ignores file modes, so a read-only bind mount stands in for a read-only copy there.
        let script = #"""
            cp -r "$DATA" "$COPY.src" && mkdir "$COPY"
            if [ "$(id -u)" = 0 ]; then
              mount --bind "$COPY.src" "$COPY" && mount -o remount,ro,bind "$COPY" || { echo "nomount"; exit 0; }
            else
              rmdir "$COPY" && mv "$COPY.src" "$COPY" && chmod -R a-w "$COPY"
            fi
            touch "$COPY/probe" 2>/dev/null && echo "writable"
            SIGNET_DATA_DIR="$COPY" "$SIGNET" entitlements --original-transaction-id "$ID" > "$OUT.entitlements"; echo "entitlements=$?"
            SIGNET_DATA_DIR="$COPY" "$SIGNET" state show --original-transaction-id "$ID" > "$OUT.state"; echo "state=$?"
            ls -a "$COPY" | tr '\n' ' '; echo
            if [ "$(id -u)" = 0 ]; then umount "$COPY"; else chmod -R u+w "$COPY"; fi
            """#
        return try SignetProcess.shell(
            script, environment: ["DATA": data, "COPY": dir.path("copy"), "OUT": dir.path("out"), "ID": id])
    }
}
