import Foundation
import SignetTestSupport
import Testing

/// Issue 3 through the CLI with the embedded default pipeline (stdin -> ... -> stdout):
/// replays and retries, `signet state show` / `signet entitlements` after a run, and the
/// schema of the events on stdout.
@Suite("State end to end through the CLI", .tags(.endToEnd), .timeLimit(.minutes(10)))
struct StateCLIEndToEndTests {
    /// Fixture notifications followed by the hand-made timelines (no forged lines).
    static func validInput(_ corpus: StateCorpus) -> [String] {
        corpus.notificationLines + corpus.customers.flatMap(\.lines)
    }

    static func ndjson(_ lines: [String]) -> Data { Data((lines.joined(separator: "\n") + "\n").utf8) }

    /// A data dir path that does not exist yet (signet creates it); its parent does, as a
    /// user's would (a missing parent is a usage error).
    static func freshDataDir(_ corpus: StateCorpus, _ name: String) -> URL {
        let runs = corpus.directory.appendingPathComponent("runs")
        try? FileManager.default.createDirectory(at: runs, withIntermediateDirectories: true)
        return runs.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8))")
    }

    /// `signet run` on the default pipeline with `--summary-json`; returns the result and the summary.
    static func run(_ corpus: StateCorpus, dataDir: URL, stdin: Data) throws -> (SignetProcess.Result, [String: Any]) {
        let summaryPath = dataDir.path + "-summary-\(UUID().uuidString.prefix(6)).json"
        let result = try StateE2E.signet(
            ["run", "--summary-json", summaryPath], stdin: stdin, corpus: corpus, extra: ["SIGNET_DATA_DIR": dataDir.path])
        guard result.exitCode == 0 else { throw StateE2EError("signet run failed (\(result.exitCode)): \(result.stderr)") }
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: summaryPath))) as? [String: Any]
        try? FileManager.default.removeItem(atPath: summaryPath)
        return (result, summary ?? [:])
    }

    static func count(_ summary: [String: Any], _ key: String, _ reason: String? = nil) -> Int {
        guard let reason else { return summary[key] as? Int ?? -1 }
        return (summary[key] as? [String: Any])?[reason] as? Int ?? 0
    }

    // MARK: - Replays and retries

    @Test("the same input run twice emits nothing the second time", .ownThread)
    func replayEmitsNothing() throws {
        let corpus = try StateCorpus.get()
        let dataDir = Self.freshDataDir(corpus, "replay")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let input = Self.ndjson(Self.validInput(corpus))

        let (first, firstSummary) = try Self.run(corpus, dataDir: dataDir, stdin: input)
        #expect(first.lines.count > corpus.notificationLines.count / 2, "the first run should emit events")
        let passed = Self.count(firstSummary, "passed")
        #expect(passed > 0 && Self.count(firstSummary, "rejected") == 0, "\(firstSummary)")

        let (second, secondSummary) = try Self.run(corpus, dataDir: dataDir, stdin: input)
        #expect(second.stdout.isEmpty, "the replay emitted: \(second.stdoutText.prefix(500))")
        #expect(Self.count(secondSummary, "delivered") == 0)
        #expect(Self.count(secondSummary, "droppedByReason", "duplicate") == passed, "\(secondSummary)")
        #expect(second.stderr.contains("dropped: duplicate=\(passed)"), "summary line: \(second.stderr.suffix(400))")
    }

    @Test("each notification three times in one input gives one set of events", .ownThread, arguments: ["adjacent", "whole input repeated"])
    func eachNotificationThreeTimes(_ layout: String) throws {
        let corpus = try StateCorpus.get()
        let lines = Self.validInput(corpus)
        let once = Self.freshDataDir(corpus, "once")
        let thrice = Self.freshDataDir(corpus, "thrice")
        defer {
            try? FileManager.default.removeItem(at: once)
            try? FileManager.default.removeItem(at: thrice)
        }
        let (single, singleSummary) = try Self.run(corpus, dataDir: once, stdin: Self.ndjson(lines))
        let tripled = layout == "adjacent" ? lines.flatMap { [$0, $0, $0] } : lines + lines + lines
        let (triple, tripleSummary) = try Self.run(corpus, dataDir: thrice, stdin: Self.ndjson(tripled))

        #expect(!single.lines.isEmpty)
        #expect(triple.lines == single.lines, "three deliveries of every notification must emit exactly the events of one")
        let passed = Self.count(singleSummary, "passed")
        #expect(Self.count(tripleSummary, "droppedByReason", "duplicate") == 2 * passed, "\(tripleSummary)")
        #expect(Self.count(tripleSummary, "delivered") == Self.count(singleSummary, "delivered"))
        let ids = try triple.jsonLines().compactMap { $0["eventId"] as? String }
        #expect(Set(ids).count == ids.count, "an eventId was emitted twice")
    }

    // MARK: - Queries after a run

    /// The command's stdout as JSON; when it is not, an error that says what the command did.
    static func json(_ result: SignetProcess.Result) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: result.stdout)
        } catch {
            throw StateE2EError("not JSON (exit \(result.exitCode)): stdout '\(result.stdoutText.prefix(300))', stderr '\(result.stderr.prefix(500))'")
        }
    }

    @Test("state show and entitlements answer for granted, expired and refunded customers", .ownThread)
    func queriesAfterARun() throws {
        let corpus = try StateCorpus.get()
        let dataDir = Self.freshDataDir(corpus, "queries")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        _ = try Self.run(corpus, dataDir: dataDir, stdin: Self.ndjson(Self.validInput(corpus) + corpus.transactionLines))
        let env = ["SIGNET_DATA_DIR": dataDir.path]

        for customer in corpus.customers {
            let show = try StateE2E.signet(["state", "show", "--original-transaction-id", customer.originalTransactionId], corpus: corpus, extra: env)
            try #require(show.exitCode == 0, "\(customer.name): \(show.stderr)")
            let snapshot = try #require(try Self.json(show) as? [String: Any])
            #expect(snapshot["originalTransactionId"] as? String == customer.originalTransactionId)
            #expect(snapshot["state"] as? String == customer.expectedState, "\(customer.name): \(snapshot)")
            #expect(snapshot["entitled"] as? Bool == customer.expectedEntitled, "\(customer.name): \(snapshot)")
            #expect(snapshot["productId"] as? String == customer.expectedProductId, "\(customer.name): \(snapshot)")

            let byId = try StateE2E.signet(["entitlements", "--original-transaction-id", customer.originalTransactionId], corpus: corpus, extra: env)
            try #require(byId.exitCode == 0, "\(customer.name): \(byId.stderr)")
            let list = try #require(try Self.json(byId) as? [[String: Any]])
            try #require(list.count == 1, "\(customer.name): \(list)")
            #expect(list[0]["state"] as? String == customer.expectedState, "\(customer.name) (entitlements now): \(list[0])")
            #expect(list[0]["entitled"] as? Bool == customer.expectedEntitled, "\(customer.name) (entitlements now): \(list[0])")
            #expect(list[0]["appAccountToken"] as? String == customer.appAccountToken)
        }

        // By account: the granted customer's token covers the subscription and a lifetime purchase.
        for name in ["granted", "expired", "refunded"] {
            let customer = try #require(corpus.customers.first { $0.name == name })
            let mine = corpus.customers.filter { $0.appAccountToken == customer.appAccountToken }
            let result = try StateE2E.signet(["entitlements", "--app-account-token", customer.appAccountToken], corpus: corpus, extra: env)
            try #require(result.exitCode == 0, "\(result.stderr)")
            let list = try #require(try Self.json(result) as? [[String: Any]])
            #expect(list.count == mine.count, "\(name): \(list)")
            for expected in mine {
                let entry = list.first { $0["originalTransactionId"] as? String == expected.originalTransactionId }
                #expect(entry?["state"] as? String == expected.expectedState, "\(expected.name) by token: \(String(describing: entry))")
                #expect(entry?["entitled"] as? Bool == expected.expectedEntitled, "\(expected.name) by token: \(String(describing: entry))")
            }
        }
        let granted = try #require(corpus.customers.first { $0.name == "granted" })
        let tokenList = try #require(try Self.json(try StateE2E.signet(
            ["entitlements", "--app-account-token", granted.appAccountToken], corpus: corpus, extra: env)) as? [[String: Any]])
        #expect(tokenList.count == 2 && tokenList.allSatisfy { $0["entitled"] as? Bool == true }, "\(tokenList)")

        // A migration links the two purchases: the history of either names the other.
        let old = try #require(corpus.customers.first { $0.name == "migrated" })
        let new = try #require(corpus.customers.first { $0.name == "migrated to" })
        for (customer, key, other) in [(old, "migratedToOriginalTransactionId", new), (new, "previousOriginalTransactionId", old)] {
            let history = try StateE2E.signet(["state", "history", "--original-transaction-id", customer.originalTransactionId], corpus: corpus, extra: env)
            try #require(history.exitCode == 0, "\(history.stderr)")
            let answer = try #require(try Self.json(history) as? [String: Any])
            #expect(answer[key] as? String == other.originalTransactionId, "\(customer.name): \(answer)")
        }
        let oldEntitlements = try StateE2E.signet(["entitlements", "--original-transaction-id", old.originalTransactionId], corpus: corpus, extra: env)
        try #require(oldEntitlements.exitCode == 0, "\(oldEntitlements.stderr)")
        let oldAnswer = try #require(try Self.json(oldEntitlements) as? [[String: Any]])
        #expect(oldAnswer.first?["migratedToOriginalTransactionId"] as? String == new.originalTransactionId, "\(oldAnswer)")

        // RESCIND_CONSENT through the binary: the fixture's app transaction is restricted until
        // `signet consent clear` (which writes beside a reader), then shows who cleared it.
        let rescind = try #require(corpus.rescindedAppTransactionIds.first, "the fixtures hold a RESCIND_CONSENT")
        let shown = try StateE2E.signet(["consent", "show", "--app-transaction-id", rescind], corpus: corpus, extra: env)
        try #require(shown.exitCode == 0, "\(shown.stderr)")
        #expect((try Self.json(shown) as? [String: Any])?["restricted"] as? Bool == true, "\(shown.stdoutText)")
        let cleared = try StateE2E.signet(["consent", "clear", "--app-transaction-id", rescind, "--by", "e2e"], corpus: corpus, extra: env)
        try #require(cleared.exitCode == 0, "\(cleared.stderr)")
        let after = try #require(try Self.json(cleared) as? [String: Any])
        #expect(after["restricted"] as? Bool == false && after["clearedBy"] as? String == "cli: e2e", "\(after)")
        let none = try StateE2E.signet(["consent", "show", "--app-transaction-id", "no-such-app-transaction"], corpus: corpus, extra: env)
        #expect(none.exitCode == 1 && none.stderr.contains("no-such-app-transaction"), "\(none.exitCode) \(none.stderr)")

        // CONSUMPTION_REQUEST through the binary: every refund question is listed, pending; the
        // consent ledger is written beside a reader and read back; none recorded is exit 1.
        let asked = corpus.consumptionRequestTransactionIds
        try #require(!asked.isEmpty, "the fixtures hold CONSUMPTION_REQUESTs")
        let listing = try StateE2E.signet(["consumption", "requests", "--since", "3650d"], corpus: corpus, extra: env)
        try #require(listing.exitCode == 0, "\(listing.stderr)")
        let requests = try #require((try Self.json(listing) as? [String: Any])?["requests"] as? [[String: Any]])
        #expect(Set(requests.compactMap { $0["transactionId"] as? String }) == asked, "\(listing.stdoutText)")
        #expect(requests.count == asked.count && requests.allSatisfy { $0["status"] as? String == "pending" })
        let customer = try #require(requests.first?["appAccountToken"] as? String)
        let consented = try StateE2E.signet(
            ["consumption", "consent", "grant", "--app-account-token", customer, "--by", "e2e", "--refund-preference", "GRANT_PRORATED"],
            corpus: corpus, extra: env)
        try #require(consented.exitCode == 0, "\(consented.stderr)")
        let entry = try #require(try Self.json(consented) as? [String: Any])
        #expect(entry["consented"] as? Bool == true && entry["by"] as? String == "cli: e2e", "\(entry)")
        #expect(entry["refundPreference"] as? String == "GRANT_PRORATED", "\(entry)")
        let withdrawn = try StateE2E.signet(
            ["consumption", "consent", "withdraw", "--app-account-token", customer], corpus: corpus, extra: env)
        #expect(withdrawn.exitCode == 0 && withdrawn.stdoutText.contains(#""consented" : false"#), "\(withdrawn.stdoutText) \(withdrawn.stderr)")
        let shownConsent = try StateE2E.signet(["consumption", "consent", "show", "--app-account-token", customer], corpus: corpus, extra: env)
        #expect(shownConsent.stdout == withdrawn.stdout, "\(shownConsent.stdoutText)")
        let noConsent = try StateE2E.signet(
            ["consumption", "consent", "show", "--original-transaction-id", "1999999999999999"], corpus: corpus, extra: env)
        #expect(noConsent.exitCode == 1 && noConsent.stderr.contains("1999999999999999"), "\(noConsent.exitCode) \(noConsent.stderr)")
        for wrong in [["--refund-preference", "MAYBE"], ["--original-transaction-id", "1"]] {
            let refused = try StateE2E.signet(
                ["consumption", "consent", "grant", "--app-account-token", customer] + wrong, corpus: corpus, extra: env)
            #expect(refused.exitCode == 2, "\(wrong): \(refused.exitCode) \(refused.stderr)")
        }

        // The app's word on a transaction's use, recorded and read back; a value Apple would refuse is exit 2.
        let used = try StateE2E.signet(
            ["consumption", "usage", "set", "--transaction-id", "2000000000000077", "--percentage", "25000"], corpus: corpus, extra: env)
        #expect(used.exitCode == 0 && used.stdoutText.contains(#""consumptionPercentage" : 25000"#), "\(used.stdoutText) \(used.stderr)")
        let usedShown = try StateE2E.signet(["consumption", "usage", "show", "--transaction-id", "2000000000000077"], corpus: corpus, extra: env)
        #expect(usedShown.exitCode == 0 && usedShown.stdout == used.stdout, "\(usedShown.stderr)")
        let usedBadly = try StateE2E.signet(
            ["consumption", "usage", "set", "--transaction-id", "2000000000000077", "--percentage", "5", "--delivery-status", "UNDELIVERED_OTHER"],
            corpus: corpus, extra: env)
        #expect(usedBadly.exitCode == 2 && usedBadly.stderr.contains("must be 0"), "\(usedBadly.exitCode) \(usedBadly.stderr)")

        // Unknown ids.
        let unknownShow = try StateE2E.signet(["state", "show", "--original-transaction-id", "1999999999999999"], corpus: corpus, extra: env)
        #expect(unknownShow.exitCode == 1, "state show of an unknown id: \(unknownShow.exitCode)")
        #expect(unknownShow.stdout.isEmpty)
        #expect(unknownShow.stderr.contains("1999999999999999"), "\(unknownShow.stderr)")
        for arguments in [["--original-transaction-id", "1999999999999999"], ["--app-account-token", "00000000-0000-4000-8000-000000000000"]] {
            let unknown = try StateE2E.signet(["entitlements"] + arguments, corpus: corpus, extra: env)
            #expect(unknown.exitCode == 0, "\(arguments): \(unknown.stderr)")
            #expect((try? Self.json(unknown) as? [Any])?.isEmpty == true, "\(arguments): \(unknown.stdoutText)")
        }
    }

    @Test("a missing database is exit 2 with a clear message, and is not created", .ownThread)
    func missingDatabase() throws {
        let corpus = try StateCorpus.get()
        let missing = Self.freshDataDir(corpus, "missing")
        let commands: [[String]] = [
            ["state", "show", "--original-transaction-id", "2000000000000001"],
            ["entitlements", "--original-transaction-id", "2000000000000001"],
            ["entitlements", "--app-account-token", "00000000-0000-4000-8000-000000000000"],
        ]
        for command in commands {
            let viaEnv = try StateE2E.signet(command, corpus: corpus, extra: ["SIGNET_DATA_DIR": missing.path])
            #expect(viaEnv.exitCode == 2, "\(command): exit \(viaEnv.exitCode)")
            #expect(viaEnv.stderr.contains("no state database at") && viaEnv.stderr.contains(missing.path), "\(command): \(viaEnv.stderr)")
            let viaOption = try StateE2E.signet(command + ["--database", missing.path + "/other.sqlite"], corpus: corpus)
            #expect(viaOption.exitCode == 2, "\(command) --database: exit \(viaOption.exitCode)")
            #expect(viaOption.stderr.contains("no state database at"), "\(command): \(viaOption.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing.path), "a query created the data directory")
    }

    // MARK: - Event schema

    @Test("events on stdout validate against Schemas/entitlement-event.schema.json", .ownThread,
          .enabled(if: Python.canImport(), "skipped: python3 with the jsonschema package is not installed (apt install python3-jsonschema)"))
    func stdoutEventsMatchSchema() throws {
        let corpus = try StateCorpus.get()
        let dataDir = Self.freshDataDir(corpus, "schema")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let (result, _) = try Self.run(corpus, dataDir: dataDir, stdin: try Data(contentsOf: corpus.mixedInput))
        let events = try result.jsonLines()
        let types = Set(events.compactMap { $0["type"] as? String })
        #expect(types.count >= 10, "the corpus should exercise most event types, got \(types.sorted())")

        let eventsFile = dataDir.appendingPathComponent("stdout.ndjson")
        try result.stdout.write(to: eventsFile)
        let schema = FixturePaths.packageRoot.appendingPathComponent("Schemas/entitlement-event.schema.json").path
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            count = 0
            for number, line in enumerate(open(sys.argv[2]), 1):
                event = json.loads(line)
                errors = sorted(validator.iter_errors(event), key=lambda e: list(e.path))
                if errors:
                    print("line %d invalid: %s -> %s" % (number, line.strip()[:400], errors[0].message))
                    sys.exit(1)
                if list(event.keys()) != list(schema["properties"].keys()):
                    print("line %d: fields not in schema order: %s" % (number, list(event.keys())))
                    sys.exit(1)
                count += 1
            print(count)
            """
        let (status, text) = try Python.run(script, arguments: [schema, eventsFile.path])
        #expect(status == 0, "\(text)")
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == String(events.count), "\(text)")
    }
}
