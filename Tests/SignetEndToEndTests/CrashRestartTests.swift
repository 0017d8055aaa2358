import Foundation
import SignetTestSupport
import Testing

/// One SIGNET_FAULT setting: the process SIGKILLs itself the `hit`-th time it reaches `point`.
struct CrashFault: Sendable, CustomTestStringConvertible {
    var point: String
    var hit: Int
    var spec: String { "\(point):\(hit)" }
    var testDescription: String { spec }
    /// Points after which the runner already acknowledged the batch: nothing may be delivered twice
    /// (docs/state-machine.md: "after the ack, before the source commit: ... nothing is emitted twice").
    var forbidsDuplicates: Bool { point == "after_acknowledge" || point == "after_source_commit" }
}

/// Issue 3: kill -9 at every step of a batch, restart, and compare with a clean run.
///
/// Input: `signet fixtures` notifications of every documented type (each its own customer),
/// forged lines, forwarded transactions, hand-made customer timelines (renewals, refunds,
/// grace period and recovery, upgrade, refund reversed, a late out-of-order notification) and
/// Apple-style retries, mixed into one file read by a `file` source with a checkpoint; batches
/// of 8; events to a file sink. After a crash and a resume the union of emitted events must
/// equal the clean run's (by eventId, byte for byte), duplicates may only be exact repeats,
/// the SQLite state must equal the clean run's for every purchase, and every forged line must
/// be in the dead-letter file.
@Suite("Crash/restart end to end", .tags(.endToEnd), .timeLimit(.minutes(5)))
struct CrashRestartTests {
    struct Baseline: Sendable {
        var dataDir: URL
        var eventLines: [String]
    }

    /// The clean single run on a fresh data directory (computed once).
    static let baseline: Result<Baseline, any Error> = Result {
        let corpus = try StateCorpus.get()
        let (dataDir, pipeline) = try StateE2E.makeDataDir(corpus, name: "clean")
        let run = try StateE2E.signet(["run", "--pipeline", pipeline.path], corpus: corpus)
        guard run.exitCode == 0 else { throw StateE2EError("clean run failed (\(run.exitCode)): \(run.stderr)") }
        return Baseline(dataDir: dataDir, eventLines: try StateE2E.outcome(dataDir: dataDir).eventLines)
    }

    static func cleanOutcome() throws -> StateE2E.Outcome {
        try StateE2E.outcome(dataDir: try baseline.get().dataDir)
    }

    static let faults: [CrashFault] = {
        var faults: [CrashFault] = []
        // Five stages per batch: hit 1 is after decode of batch 1, 3 after dedupe of batch 1,
        // 12 in batch 3, 37 in batch 8 (several batches in flight in different stages).
        for hit in [1, 3, 12, 37] { faults.append(CrashFault(point: "after_stage_process", hit: hit)) }
        for point in ["after_state_commit", "after_sink_write", "after_acknowledge", "after_source_commit"] {
            for hit in [1, 3, 9] { faults.append(CrashFault(point: point, hit: hit)) }
        }
        return faults
    }()

    @Test("the clean run is sane: events, dead letters, expected timeline states, batch-size independent", .ownThread)
    func cleanBaseline() throws {
        let corpus = try StateCorpus.get()
        let clean = try Self.cleanOutcome()
        let ids = try clean.eventIds()
        #expect(ids.count > corpus.notificationLines.count / 2, "too few events: \(ids.count)")
        #expect(Set(ids).count == ids.count, "the clean run emitted an eventId twice")
        #expect(clean.undelivered == 0)
        for line in corpus.forgedLines {
            #expect(clean.deadLetterInputs.contains(line), "forged line not dead-lettered: \(line.prefix(100))")
        }
        // Only forged lines are rejected.
        #expect(clean.deadLetterInputs == Set(corpus.forgedLines), "unexpected rejects: \(clean.deadLetterInputs.subtracting(corpus.forgedLines).map { $0.prefix(120) })")
        // Columns: 0 id, 1 state, 2 entitled, 4 product_id.
        for customer in corpus.customers {
            let row = try #require(clean.subscriptions[customer.originalTransactionId], "no state for \(customer.name)")
            #expect(row[1] == customer.expectedState, "\(customer.name): \(row)")
            #expect(row[4] == customer.expectedProductId, "\(customer.name): \(row)")
            let types = try clean.eventLines.compactMap { line -> String? in
                let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return event["originalTransactionId"] as? String == customer.originalTransactionId ? event["type"] as? String : nil
            }
            #expect(types == customer.expectedEvents, "\(customer.name): events \(types)")
        }

        // The embedded default pipeline (stdin, batch 256, stdout) on the same input emits the same
        // events in the same order: batch boundaries do not change what is derived.
        let dataDir = corpus.directory.appendingPathComponent("runs/stdin-\(UUID().uuidString.prefix(8))")
        // The data dir's parent must exist (a missing parent is a usage error); the run creates the rest.
        try FileManager.default.createDirectory(at: dataDir.deletingLastPathComponent(), withIntermediateDirectories: true)
        let stdin = try Data(contentsOf: corpus.mixedInput)
        let run = try StateE2E.signet(["run"], stdin: stdin, corpus: corpus, extra: ["SIGNET_DATA_DIR": dataDir.path])
        #expect(run.exitCode == 0, "\(run.stderr)")
        #expect(run.lines == clean.eventLines, "stdin pipeline (batch 256) and file pipeline (batch 8) disagree")
        try? FileManager.default.removeItem(at: dataDir)
    }

    @Test("kill -9 at a fault point, then resume: nothing lost, nothing doubled", .ownThread, arguments: faults)
    func crashOnceThenResume(_ fault: CrashFault) throws {
        let corpus = try StateCorpus.get()
        let clean = try Self.cleanOutcome()
        let (dataDir, pipeline) = try StateE2E.makeDataDir(corpus, name: "crash-\(fault.point)-\(fault.hit)")
        defer { try? FileManager.default.removeItem(at: dataDir) }

        let crashed = try StateE2E.signet(["run", "--pipeline", pipeline.path], corpus: corpus, extra: ["SIGNET_FAULT": fault.spec])
        try #require(
            crashed.exitCode == SIGKILL && crashed.stderr.contains("fault injection: SIGKILL at \(fault.point) #\(fault.hit)"),
            "expected a SIGKILL at \(fault.spec), got exit \(crashed.exitCode): \(crashed.stderr.suffix(600))")

        var restarts = 0
        var last: SignetProcess.Result
        repeat {
            last = try StateE2E.signet(["run", "--pipeline", pipeline.path], corpus: corpus)
            restarts += 1
        } while last.exitCode != 0 && restarts < 3
        try #require(last.exitCode == 0, "the restart did not complete: \(last.exitCode) \(last.stderr.suffix(800))")
        #expect(restarts == 1, "a restart without a fault should complete at once")

        let outcome = try StateE2E.outcome(dataDir: dataDir)
        let (problems, duplicates) = try StateE2E.compare(clean: clean, crashed: outcome, forged: corpus.forgedLines)
        #expect(problems.isEmpty, "\(fault.spec):\n\(problems.joined(separator: "\n"))")
        if fault.forbidsDuplicates {
            #expect(duplicates == 0, "\(fault.spec): the batch was acknowledged before the crash, yet \(duplicates) events were delivered again")
        }
        print("[crash] \(fault.spec): \(outcome.eventLines.count) event lines for \(clean.eventLines.count) events, "
              + "\(duplicates) exact duplicate deliveries (at-least-once), \(outcome.deadLetters.count) dead letters "
              + "for \(corpus.forgedLines.count) forged lines; resume: \(last.stderr.split(separator: "\n").last ?? "")")
    }

    @Test("the comparison itself detects lost, altered and invented events, state drift and missing dead letters", .ownThread)
    func comparisonCanFail() throws {
        let corpus = try StateCorpus.get()
        let clean = try Self.cleanOutcome()
        #expect(try StateE2E.compare(clean: clean, crashed: clean, forged: corpus.forgedLines).problems.isEmpty)

        var doubled = clean
        doubled.eventLines += clean.eventLines.prefix(3)
        let allowed = try StateE2E.compare(clean: clean, crashed: doubled, forged: corpus.forgedLines)
        #expect(allowed.problems.isEmpty && allowed.duplicates == 3, "exact repeats are at-least-once delivery")

        var lost = clean
        lost.eventLines.removeLast()
        #expect(try !StateE2E.compare(clean: clean, crashed: lost, forged: corpus.forgedLines).problems.isEmpty)

        var altered = clean
        altered.eventLines.append(clean.eventLines[0].replacingOccurrences(of: "\"entitled\":true", with: "\"entitled\":false"))
        altered.eventLines.append(clean.eventLines[1].replacingOccurrences(of: "\"eventId\":\"", with: "\"eventId\":\"0"))
        #expect(try StateE2E.compare(clean: clean, crashed: altered, forged: corpus.forgedLines).problems.count >= 2)

        var drifted = clean
        let someId = try #require(clean.subscriptions.keys.first)
        drifted.subscriptions[someId]?[1] = "not-a-state"
        drifted.undelivered = 1
        drifted.dedupeKeys.insert("extra")
        #expect(try StateE2E.compare(clean: clean, crashed: drifted, forged: corpus.forgedLines).problems.count == 3)

        var undeadLettered = clean
        undeadLettered.deadLetters.removeAll()
        #expect(try StateE2E.compare(clean: clean, crashed: undeadLettered, forged: corpus.forgedLines).problems.count == corpus.forgedLines.count + 1)
    }

    /// The stdin source cannot resume: after a crash the producer re-sends everything (as a
    /// webhook receiver replays its spool). The union of both runs' stdout must equal a clean
    /// run's, and the crashed database must be readable by the query commands before the restart.
    @Test("default stdin pipeline killed, queried while crashed, then fed the whole input again", .ownThread,
          arguments: ["after_stage_process:2", "after_state_commit:1", "after_sink_write:1", "after_acknowledge:1"])
    func stdinCrashThenFullReplay(_ spec: String) throws {
        let corpus = try StateCorpus.get()
        let clean = try Self.cleanOutcome()
        let dataDir = corpus.directory.appendingPathComponent("runs/stdin-crash-\(UUID().uuidString.prefix(8))")
        // The data dir's parent must exist (a missing parent is a usage error); the run creates the rest.
        try FileManager.default.createDirectory(at: dataDir.deletingLastPathComponent(), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let env = ["SIGNET_DATA_DIR": dataDir.path]
        let input = try Data(contentsOf: corpus.mixedInput)

        var faulty = env
        faulty["SIGNET_FAULT"] = spec
        let crashed = try StateE2E.signet(["run"], stdin: input, corpus: corpus, extra: faulty)
        try #require(crashed.exitCode == SIGKILL && crashed.stderr.contains("fault injection"), "\(spec): exit \(crashed.exitCode) \(crashed.stderr.suffix(500))")

        if spec != "after_stage_process:2" {
            // The batch was committed: its purchases are visible to the CLI in the crashed (hot WAL) database.
            let granted = try #require(corpus.customers.first { $0.name == "granted" })
            let show = try StateE2E.signet(["state", "show", "--original-transaction-id", granted.originalTransactionId], corpus: corpus, extra: env)
            #expect(show.exitCode == 0, "\(spec): state show on the crashed database: \(show.exitCode) \(show.stderr)")
            let list = try StateE2E.signet(["entitlements", "--app-account-token", granted.appAccountToken], corpus: corpus, extra: env)
            #expect(list.exitCode == 0 && list.stdoutText.contains(granted.originalTransactionId), "\(spec): \(list.stderr)")
        }

        let replay = try StateE2E.signet(["run"], stdin: input, corpus: corpus, extra: env)
        try #require(replay.exitCode == 0, "\(spec): replay failed: \(replay.stderr.suffix(600))")
        var outcome = try StateE2E.outcome(dataDir: dataDir)
        outcome.eventLines = crashed.lines + replay.lines
        let (problems, duplicates) = try StateE2E.compare(clean: clean, crashed: outcome, forged: corpus.forgedLines)
        #expect(problems.isEmpty, "\(spec):\n\(problems.joined(separator: "\n"))")
        print("[crash] stdin \(spec): \(crashed.lines.count) + \(replay.lines.count) event lines for \(clean.eventLines.count) events, \(duplicates) exact duplicates")
    }

    @Test("a crash loop: killed again and again at rotating points until the input is done", .ownThread)
    func repeatedCrashes() throws {
        let corpus = try StateCorpus.get()
        let clean = try Self.cleanOutcome()
        let (dataDir, pipeline) = try StateE2E.makeDataDir(corpus, name: "crash-loop")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let rotation = [
            "after_state_commit:2", "after_sink_write:1", "after_stage_process:7", "after_acknowledge:2",
            "after_source_commit:2", "after_sink_write:3", "after_stage_process:2",
        ]
        var kills = 0, runs = 0
        var finished = false
        while runs < 120 {
            let fault = rotation[runs % rotation.count]
            let run = try StateE2E.signet(["run", "--pipeline", pipeline.path], corpus: corpus, extra: ["SIGNET_FAULT": fault])
            runs += 1
            if run.exitCode == 0 {
                finished = true
                break
            }
            try #require(run.exitCode == SIGKILL && run.stderr.contains("fault injection"), "run \(runs) (\(fault)) failed: \(run.exitCode) \(run.stderr.suffix(600))")
            kills += 1
        }
        try #require(finished, "no progress: still killed after \(runs) runs")
        #expect(kills >= 5, "the loop should have crashed several times, crashed \(kills) times")
        let outcome = try StateE2E.outcome(dataDir: dataDir)
        let (problems, duplicates) = try StateE2E.compare(clean: clean, crashed: outcome, forged: corpus.forgedLines)
        #expect(problems.isEmpty, "crash loop:\n\(problems.joined(separator: "\n"))")
        print("[crash] loop: \(kills) kills in \(runs) runs; \(outcome.eventLines.count) event lines for \(clean.eventLines.count) events, \(duplicates) exact duplicates")
    }
}
