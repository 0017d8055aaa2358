import Foundation
import SignetTestSupport
import Testing

/// `signet backfill` (issue 21 §2) against the fake App Store Server API: notifications that
/// never arrived are recovered through the pipeline's own stages, exactly once in effect,
/// across a kill -9, within Apple's lookback, and a missing key is one line.
@Suite("signet backfill end to end", .tags(.endToEnd), .timeLimit(.minutes(10)))
struct BackfillCLIEndToEndTests {
    /// Every event line of an uninterrupted `signet run` over all of the bed's notifications,
    /// and the data dir it left.
    private func reference(_ bed: BackfillTestBed) async throws -> (events: [String], dataDir: String) {
        let dataDir = bed.dataDir("reference")
        let run = try await bed.signet(["run"], dataDir: dataDir, stdin: bed.lines)
        try #require(run.exitCode == 0, "\(run.stderr)")
        try #require(!run.lines.isEmpty)
        return (run.lines, dataDir)
    }

    /// Checks that `events` (possibly with byte-identical repeats of an at-least-once
    /// redelivery) are exactly the reference's, and that state agrees with it.
    private func expectSameOutcome(
        _ bed: BackfillTestBed, events: [String], dataDir: String, reference: (events: [String], dataDir: String)
    ) async throws {
        var byId: [String: String] = [:]
        for line in events {
            let id = try #require(BackfillTestBed.field("eventId", of: line), "not an event: \(line.prefix(200))")
            if let earlier = byId[id] { #expect(earlier == line, "event \(id) delivered twice with different bytes") }
            byId[id] = line
        }
        #expect(Set(byId.values) == Set(reference.events), "events differ from an uninterrupted run")
        #expect(byId.count == reference.events.count)
        let expected = try await bed.states(of: reference.events, dataDir: reference.dataDir)
        let actual = try await bed.states(of: reference.events, dataDir: dataDir)
        #expect(actual == expected, "state differs from an uninterrupted run")
    }

    @Test("after an outage, backfill yields the events and state of an uninterrupted run; a second one emits nothing", .ownThread)
    func outageRecovered() async throws {
        try await BackfillTestBed.with(count: 60) { bed in
            let reference = try await reference(bed)
            // A third of the notifications never reached Signet.
            let arrived = bed.lines.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
            let dataDir = bed.dataDir("outage")
            let partial = try await bed.signet(["run"], dataDir: dataDir, stdin: arrived)
            try #require(partial.exitCode == 0, "\(partial.stderr)")
            #expect(partial.lines.count < reference.events.count)

            let backfill = try await bed.signet(["backfill", "--since", "72h", "--progress-interval", "0.5"], dataDir: dataDir)
            #expect(backfill.exitCode == 0, "\(backfill.stderr)")
            #expect(!backfill.lines.isEmpty, "the backfill emitted nothing")
            #expect(backfill.stderr.contains("backfill done"), "\(backfill.stderr)")
            try await expectSameOutcome(bed, events: partial.lines + backfill.lines, dataDir: dataDir, reference: reference)
            // Every request carried an acceptable JWT; the history came in several sub-windows.
            let history = bed.fake.requests(.notificationHistory)
            #expect(history.allSatisfy { $0.authRefusal == nil && $0.status == 200 })
            #expect(Set(history.compactMap { $0.jsonBody?["startDate"] as? Int64 }).count > 1)

            let again = try await bed.signet(["backfill", "--since", "72h"], dataDir: dataDir)
            #expect(again.exitCode == 0, "\(again.stderr)")
            #expect(again.stdout.isEmpty, "a second backfill emitted: \(again.stdoutText.prefix(400))")
            #expect(!again.stderr.contains("resuming"), "a finished backfill was resumed: \(again.stderr)")
        }
    }

    @Test("kill -9 during a backfill: the next one resumes from the last committed page, without loss or double effect", .ownThread)
    func killedAndResumed() async throws {
        let pageSize = 3
        try await BackfillTestBed.with(count: 90, pageSize: pageSize) { bed in
            let reference = try await reference(bed)
            let arrived = bed.lines.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            let dataDir = bed.dataDir("killed")
            let partial = try await bed.signet(["run"], dataDir: dataDir, stdin: arrived)
            try #require(partial.exitCode == 0, "\(partial.stderr)")

            let checkpoint = dataDir + "/backfill.json"
            let child = try await bed.backfillInterrupted(by: SIGKILL, afterPages: 4, dataDir: dataDir)
            #expect(child.killedBySignal)
            let pagesAtKill = Self.committedPages(checkpoint)
            let requestsBefore = bed.fake.requests(.notificationHistory).count

            let resumed = try await bed.signet(["backfill", "--since", "72h"], dataDir: dataDir)
            #expect(resumed.exitCode == 0, "\(resumed.stderr)")
            #expect(resumed.stderr.contains("resuming the unfinished backfill"), "\(resumed.stderr)")
            let requestsAfter = bed.fake.requests(.notificationHistory).count - requestsBefore

            // What a full run asks: one request per page of every sub-window, at least one each.
            let subWindows = try Self.subWindows(checkpoint)
            let full = subWindows.reduce(0) { total, window in
                let count = bed.sentDates.count { $0 >= window.start && $0 < window.end }
                return total + max(1, (count + pageSize - 1) / pageSize)
            }
            #expect(requestsAfter <= full - pagesAtKill + 8, "resumed with \(requestsAfter) requests of \(full), \(pagesAtKill) pages committed")
            #expect(requestsBefore + requestsAfter < 2 * full, "fetched from the start again")
            try await expectSameOutcome(
                bed, events: partial.lines + child.stdoutText.split(separator: "\n").map(String.init) + resumed.lines,
                dataDir: dataDir, reference: reference)
        }
    }

    @Test("Ctrl-C: drains and commits what is in flight, exits 0, and the next backfill resumes", .ownThread)
    func interruptedAndResumed() async throws {
        try await BackfillTestBed.with(count: 40, pageSize: 2) { bed in
            let reference = try await reference(bed)
            let dataDir = bed.dataDir("interrupted")
            let checkpoint = dataDir + "/backfill.json"
            let child = try await bed.backfillInterrupted(by: SIGINT, afterPages: 3, dataDir: dataDir)
            #expect(child.exitStatus == 0, "\(child.stderrText)")
            #expect(child.stderrText.contains("backfill stopped; run the same command again to resume"), "\(child.stderrText)")
            let pagesAtStop = Self.committedPages(checkpoint)
            // Another app's backfill does not resume this one.
            let otherApp = try await bed.signet(
                ["backfill", "--since", "72h"], dataDir: dataDir, extra: ["SIGNET_BUNDLE_ID": "com.example.other"])
            #expect(otherApp.exitCode == 2 && otherApp.stderr.contains("--restart discards it"), "\(otherApp.stderr)")
            #expect(Self.committedPages(checkpoint) == pagesAtStop)

            let resumed = try await bed.signet(["backfill", "--since", "72h"], dataDir: dataDir)
            #expect(resumed.exitCode == 0, "\(resumed.stderr)")
            #expect(resumed.stderr.contains("resuming the unfinished backfill"), "\(resumed.stderr)")
            #expect(resumed.stderr.contains("(resumed after \(pagesAtStop) pages)"), "\(resumed.stderr)")
            try await expectSameOutcome(
                bed, events: child.stdoutText.split(separator: "\n").map(String.init) + resumed.lines, dataDir: dataDir,
                reference: reference)
        }
    }

    @Test("a window older than Apple keeps is clamped, with a warning, before anything is fetched", .ownThread)
    func clampedToLookback() async throws {
        try await BackfillTestBed.with(count: 8) { bed in
            let started = Int64(Date().timeIntervalSince1970 * 1000)
            let backfill = try await bed.signet(["backfill", "--since", "45d"], dataDir: bed.dataDir("clamp"))
            #expect(backfill.exitCode == 0, "\(backfill.stderr)")
            #expect(backfill.stderr.contains("older than Apple keeps notification history (30 days in Sandbox)"), "\(backfill.stderr)")
            #expect(!backfill.lines.isEmpty)
            let history = bed.fake.requests(.notificationHistory)
            #expect(!history.isEmpty && history.allSatisfy { $0.status == 200 }, "\(history.map(\.status))")
            let lookback: Int64 = 30 * 86_400_000
            for request in history {
                let start = try #require(request.jsonBody?["startDate"] as? Int64)
                #expect(start >= started - lookback, "a request asked for \(start), beyond the lookback")
            }
        }
    }

    @Test("missing credentials: one line naming the variable, exit 2, nothing fetched", .ownThread)
    func missingCredentials() async throws {
        try await BackfillTestBed.with(count: 2) { bed in
            for missing in ["SIGNET_APPSTORE_KEY_ID", "SIGNET_APPSTORE_ISSUER_ID", "SIGNET_APPSTORE_PRIVATE_KEY"] {
                var environment = bed.environment
                environment[missing] = nil
                environment["SIGNET_DATA_DIR"] = bed.dataDir("missing")
                let result = try await SignetProcess.output(["backfill", "--since", "72h"], environment: environment, timeout: 60)
                #expect(result.exitCode == 2, "\(missing): \(result.stderr)")
                let lines = result.stderr.split(separator: "\n")
                #expect(lines.count == 1 && lines[0].contains(missing), "\(missing): \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
            let unreadable = try await bed.signet(
                ["backfill", "--since", "72h"], dataDir: bed.dataDir("missing"),
                extra: ["SIGNET_APPSTORE_PRIVATE_KEY": bed.directory.path("no-such-key.p8")])
            #expect(unreadable.exitCode == 2 && unreadable.stderr.split(separator: "\n").count == 1, "\(unreadable.stderr)")
            #expect(bed.fake.requests.isEmpty)
        }
    }

    @Test("a pipeline file with source appstore_history: settings from the environment, its own checkpoint", .ownThread)
    func pipelineFileSource() async throws {
        try await BackfillTestBed.with(count: 10) { bed in
            let reference = try await reference(bed)
            let dataDir = bed.dataDir("pipeline-file")
            let pipeline = Self.defaultPipeline(replacingSourceWith: """
                source:
                  type: appstore_history
                  start: 3d
                  sub_windows: 3
                  parallelism: 2
                  checkpoint: ${SIGNET_DATA_DIR}/history.checkpoint
                """)
            let file = bed.directory.path("history.yaml")
            try pipeline.write(toFile: file, atomically: true, encoding: .utf8)
            let lint = try await bed.signet(["lint", file], dataDir: dataDir)
            #expect(lint.exitCode == 0, "\(lint.stdoutText) \(lint.stderr)")

            let run = try await bed.signet(["run", "--pipeline", file], dataDir: dataDir)
            #expect(run.exitCode == 0, "\(run.stderr)")
            #expect(Set(run.lines) == Set(reference.events) && run.lines.count == reference.events.count)
            let checkpoint = try #require(Self.checkpointObject(dataDir + "/history.checkpoint"), "no checkpoint")
            let subWindows = try #require(checkpoint["subWindows"] as? [[String: Any]])
            #expect(subWindows.count == 3 && subWindows.allSatisfy { $0["done"] as? Bool == true })
            #expect(bed.fake.requests(.notificationHistory).count >= 3)

            // Without the key's variables the source fails when it opens, naming the variable.
            var environment = bed.environment
            environment["SIGNET_APPSTORE_ISSUER_ID"] = nil
            environment["SIGNET_DATA_DIR"] = bed.dataDir("pipeline-file-2")
            let failed = try await SignetProcess.output(["run", "--pipeline", file], environment: environment, timeout: 60)
            #expect(failed.exitCode != 0 && failed.stderr.contains("SIGNET_APPSTORE_ISSUER_ID"), "\(failed.stderr)")
        }
    }

    /// Pipelines/stdin.yaml with its `source:` block replaced.
    static func defaultPipeline(replacingSourceWith source: String) -> String {
        let text = (try? String(contentsOf: FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml"), encoding: .utf8)) ?? ""
        var lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: "source:") else { return text }
        var end = start + 1
        while end < lines.count, lines[end].hasPrefix(" ") || lines[end].isEmpty { end += 1 }
        lines.replaceSubrange(start..<end, with: source.components(separatedBy: "\n") + [""])
        return lines.joined(separator: "\n")
    }

    // MARK: - The checkpoint file

    private static func checkpointObject(_ path: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    /// Pages the checkpoint records as committed (0 when there is none yet).
    static func committedPages(_ path: String) -> Int {
        let subWindows = checkpointObject(path)?["subWindows"] as? [[String: Any]] ?? []
        return subWindows.reduce(0) { $0 + ($1["pages"] as? Int ?? 0) }
    }

    /// The sub-windows' spans as first planned (startDate, endDate of each request).
    static func subWindows(_ path: String) throws -> [(start: Int64, end: Int64)] {
        let subWindows = checkpointObject(path)?["subWindows"] as? [[String: Any]] ?? []
        return try subWindows.map { sub in
            let request = try #require(sub["request"] as? [String: Any])
            return (try #require(request["startDate"] as? Int64), try #require(request["endDate"] as? Int64))
        }
    }
}
