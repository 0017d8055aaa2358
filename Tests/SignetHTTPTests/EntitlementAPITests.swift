import AppStoreModels
import Foundation
import SignetCore
import SignetHTTP
import SignetState
import SignetTestSupport
import Testing

@Suite("Entitlement API: same JSON as the CLI, bearer token off the default")
struct EntitlementAPITests {
    /// A bed whose pipeline ran once over all notifications but the last, with its events on file.
    static func ranBed(store: String? = nil) async throws -> (ServiceTestBed, events: [[String: Any]]) {
        let bed = try ServiceTestBed(count: 40)
        let lines = try String(contentsOf: bed.notifications, encoding: .utf8).split(separator: "\n")
        let first = bed.directory.appendingPathComponent("first.ndjson")
        try (lines.dropLast().joined(separator: "\n") + "\n").write(to: first, atomically: true, encoding: .utf8)
        try ((lines.last ?? "") + "\n").write(to: bed.directory.appendingPathComponent("last.ndjson"), atomically: true, encoding: .utf8)
        let pipeline = try bed.load(bed.pipelineYAML(
            input: first, sink: "type: file\npath: \(bed.directory.path)/events.ndjson", http: nil, store: store))
        _ = try await PipelineRunner(pipeline: pipeline).run()
        let events = try bed.lines("events.ndjson").compactMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        return (bed, events)
    }

    /// Runs the pipeline again over the last notification with its events held by a
    /// receiver, so the store stays open while `body` queries the API; then lets it end.
    static func whileRunning<T: Sendable>(
        _ bed: ServiceTestBed, http: String, environment: [String: String] = [:], sections: String = "",
        _ body: @Sendable (Int) async throws -> T
    ) async throws -> T {
        // The held request keeps the pipeline (and its store) running until the body is done;
        // the sink's timeout is longer than the hold, so a slow machine cannot end it early.
        let receiver = try TestReceiver(plan: ["hold"], directory: bed.directory)
        defer { receiver.stop() }
        let release = receiver.releaser
        let yaml = bed.pipelineYAML(
            input: bed.directory.appendingPathComponent("last.ndjson"), sink: "type: http\nurl: \(receiver.url)\ntimeout: 120s", http: http)
            + sections
        let (runner, admin, _) = try bed.service(try bed.load(yaml), environment: environment)
        return try await withListening(try #require(admin)) { port in
            let run = Task { try await runner.run() }
            while runner.health.phase != .running { try await Task.sleep(for: .milliseconds(20)) }
            let result = try await body(port)
            release()
            _ = try await run.value
            return result
        }
    }

    /// An entitlements answer without its evaluatedAt fields (as sorted-key JSON per row), and those fields.
    static func entitlements(_ json: String) throws -> (rows: [String], evaluatedAt: [Int64]) {
        let rows = try #require(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        var texts: [String] = []
        var instants: [Int64] = []
        for var row in rows {
            instants.append((row.removeValue(forKey: "evaluatedAt") as? NSNumber)?.int64Value ?? -1)
            // The instant differs between two calls; what it means must not.
            if var asOf = row["asOf"] as? [String: Any] {
                #expect(asOf.removeValue(forKey: "at") is NSNumber)
                row["asOf"] = asOf
            }
            texts.append(String(decoding: try JSONSerialization.data(withJSONObject: row, options: [.sortedKeys]), as: UTF8.self))
        }
        return (texts, instants)
    }

    @Test("on loopback without a token the API answers what `signet entitlements` and `signet state show` print")
    func loopbackMatchesCLI() async throws {
        let (bed, events) = try await Self.ranBed()
        defer { bed.remove() }
        let event = try #require(events.first { $0["appAccountToken"] is String })
        let original = try #require(event["originalTransactionId"] as? String)
        let account = try #require(event["appAccountToken"] as? String)
        let database = bed.directory.appendingPathComponent("signet.sqlite").path

        let started = Int64(Date().timeIntervalSince1970 * 1000)
        let answers = try await Self.whileRunning(bed, http: "address: 127.0.0.1:0") { port in
            [
                try await pythonGET(port: port, path: "/v1/entitlements?originalTransactionId=\(original)"),
                try await pythonGET(port: port, path: "/v1/entitlements?appAccountToken=\(account)"),
                try await pythonGET(port: port, path: "/v1/subscriptions/\(original)"),
                try await pythonGET(port: port, path: "/v1/subscriptions/0000"),
                try await pythonGET(port: port, path: "/v1/entitlements"),
                try await pythonGET(port: port, path: "/v1/entitlements?appAccountToken=a&originalTransactionId=b"),
                // A repeated or an extra parameter must not answer for the first one.
                try await pythonGET(port: port, path: "/v1/entitlements?originalTransactionId=\(original)&originalTransactionId=0000"),
                try await pythonGET(port: port, path: "/v1/entitlements?originalTransactionId=\(original)&debug=1"),
                // Apple types appAccountToken as a UUID: a backend in Swift writes uuidString (upper
                // case), Apple signs lower case; both name the same customer, and a non-UUID none.
                try await pythonGET(port: port, path: "/v1/entitlements?appAccountToken=\(account.uppercased())"),
                try await pythonGET(port: port, path: "/v1/entitlements?appAccountToken=not-a-uuid"),
            ]
        }
        let cliByOriginal = try await SignetProcess.output(["entitlements", "--database", database, "--original-transaction-id", original])
        let cliByAccount = try await SignetProcess.output(["entitlements", "--database", database, "--app-account-token", account])
        let cliShow = try await SignetProcess.output(["state", "show", "--database", database, "--original-transaction-id", original])
        #expect(answers[0].status == 200)
        #expect(answers[1].status == 200)
        #expect(answers[2].status == 200)
        // "As of now": the CLI ran a moment later, so only evaluatedAt may differ, and the API's lies before the CLI's.
        let apiByOriginal = try Self.entitlements(answers[0].body), cliOriginal = try Self.entitlements(cliByOriginal.stdoutText)
        #expect(!apiByOriginal.rows.isEmpty)
        #expect(apiByOriginal.rows == cliOriginal.rows)
        #expect(apiByOriginal.evaluatedAt.allSatisfy { $0 <= (cliOriginal.evaluatedAt.first ?? 0) && $0 >= started })
        #expect(try Self.entitlements(answers[1].body).rows == Self.entitlements(cliByAccount.stdoutText).rows)
        #expect(answers[2].body.trimmingCharacters(in: .whitespacesAndNewlines) == cliShow.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(answers[0].body.contains(original))
        #expect(answers[3].status == 404)
        #expect(answers[4].status == 400)
        #expect(answers[5].status == 400)
        #expect(answers[6].status == 400)
        #expect(answers[7].status == 400)
        #expect(account == account.lowercased(), "events carry the canonical form")
        #expect(answers[8].status == 200)
        #expect(try Self.entitlements(answers[8].body).rows == Self.entitlements(answers[1].body).rows)
        #expect(!(try Self.entitlements(answers[8].body).rows.isEmpty))
        #expect(answers[9].status == 400 && answers[9].body.contains("must be a UUID"), "\(answers[9])")
        let cliUpper = try await SignetProcess.output(["entitlements", "--database", database, "--app-account-token", account.uppercased()])
        #expect(try Self.entitlements(cliUpper.stdoutText).rows == Self.entitlements(cliByAccount.stdoutText).rows)
        let cliInvalid = try await SignetProcess.output(["entitlements", "--database", database, "--app-account-token", "not-a-uuid"])
        #expect(cliInvalid.exitCode != 0 && cliInvalid.stderr.contains("must be a UUID"), "\(cliInvalid.stderr)")
    }

    @Test("entitlement names: on every event, in the API's answers, and ?entitlement=NAME keeps the purchases granting it")
    func entitlementNames() async throws {
        let (bed, events) = try await Self.ranBed(
            store: "entitlements: { pro: [com.example.signet.premium.monthly, com.example.signet.premium.yearly], lifetime: [com.example.signet.lifetime] }")
        defer { bed.remove() }
        #expect(!events.isEmpty)
        for event in events {
            let product = event["productId"] as? String ?? ""
            let expected = product.contains(".premium.") ? ["pro"] : product.hasSuffix(".lifetime") ? ["lifetime"] : []
            #expect(event["entitlements"] as? [String] == expected, "\(product)")
        }
        let account = try #require(events.first { ($0["productId"] as? String)?.contains(".premium.") == true && $0["appAccountToken"] is String }?["appAccountToken"] as? String)
        // The store kept the mapping: this second run's pipeline configures none.
        let answers = try await Self.whileRunning(bed, http: "address: 127.0.0.1:0") { port in
            [
                try await pythonGET(port: port, path: "/v1/entitlements?appAccountToken=\(account)"),
                try await pythonGET(port: port, path: "/v1/entitlements?appAccountToken=\(account)&entitlement=pro"),
                try await pythonGET(port: port, path: "/v1/entitlements?appAccountToken=\(account)&entitlement=nothing"),
                try await pythonGET(port: port, path: "/v1/entitlements?appAccountToken=\(account)&entitlement=pro&entitlement=lifetime"),
            ]
        }
        #expect(answers.map(\.status) == [200, 200, 200, 400])
        func rows(_ body: String) throws -> [[String: Any]] { try #require(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [[String: Any]]) }
        let all = try rows(answers[0].body), pro = try rows(answers[1].body)
        #expect(!pro.isEmpty)
        #expect(pro.allSatisfy { $0["entitlements"] as? [String] == ["pro"] })
        #expect(pro.count == all.filter { ($0["entitlements"] as? [String])?.contains("pro") == true }.count)
        #expect(try rows(answers[2].body).isEmpty)
        // The binary reads the same names from the database file.
        let database = bed.directory.appendingPathComponent("signet.sqlite").path
        let cli = try await SignetProcess.output(["entitlements", "--database", database, "--app-account-token", account, "--entitlement", "pro"])
        #expect(cli.exitCode == 0, "\(cli.stderr)")
        #expect(try rows(cli.stdoutText).map { $0["originalTransactionId"] as? String } == pro.map { $0["originalTransactionId"] as? String })
    }

    @Test("a purchase's history: /v1/subscriptions/{id}/events answers what `signet state history` prints")
    func history() async throws {
        let (bed, events) = try await Self.ranBed(store: "outbox_retention: 1d")
        defer { bed.remove() }
        // The purchase with the most events.
        let counts = Dictionary(grouping: events.compactMap { $0["originalTransactionId"] as? String }, by: { $0 }).mapValues(\.count)
        let original = try #require(counts.max { $0.value < $1.value }?.key)
        let answers = try await Self.whileRunning(bed, http: "address: 127.0.0.1:0") { port in
            [
                try await pythonGET(port: port, path: "/v1/subscriptions/\(original)/events"),
                try await pythonGET(port: port, path: "/v1/subscriptions/\(original)/events?limit=1"),
                try await pythonGET(port: port, path: "/v1/subscriptions/0000/events"),
                try await pythonGET(port: port, path: "/v1/subscriptions/\(original)/events?limit=0"),
                try await pythonGET(port: port, path: "/v1/subscriptions/\(original)/events?limit=1&limit=2"),
            ]
        }
        #expect(answers.map(\.status) == [200, 200, 404, 400, 400])
        func history(_ body: String) throws -> [[String: Any]] {
            let answer = try #require(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            #expect(answer["originalTransactionId"] as? String == original)
            return try #require(answer["events"] as? [[String: Any]])
        }
        let kept = try history(answers[0].body)
        let published = events.filter { $0["originalTransactionId"] as? String == original }
        #expect(kept.map { ($0["event"] as? [String: Any])?["eventId"] as? String } == published.map { $0["eventId"] as? String })
        #expect(kept.allSatisfy { $0["deliveredAt"] is NSNumber })
        #expect(try history(answers[1].body).map { $0["sequence"] as? Int } == [kept.last?["sequence"] as? Int])

        let database = bed.directory.appendingPathComponent("signet.sqlite").path
        let cli = try await SignetProcess.output(["state", "history", "--database", database, "--original-transaction-id", original])
        #expect(cli.exitCode == 0, "\(cli.stderr)")
        #expect(cli.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == answers[0].body.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(!cli.stderr.contains("no events kept"), "\(cli.stderr)")
        let missing = try await SignetProcess.output(["state", "history", "--database", database, "--original-transaction-id", "0000"])
        #expect(missing.exitCode == 1 && missing.stderr.contains("no state and no events"), "\(missing.stderr)")
    }

    @Test("a customer: /v1/customers/{id} by originalTransactionId or appAccountToken (upper case too) answers what `signet support customer` prints, events in the timeline")
    func customer() async throws {
        let (bed, events) = try await Self.ranBed(store: "outbox_retention: 1d")
        defer { bed.remove() }
        let event = try #require(events.first { $0["appAccountToken"] is String })
        let original = try #require(event["originalTransactionId"] as? String)
        let account = try #require(event["appAccountToken"] as? String)
        let answers = try await Self.whileRunning(bed, http: "address: 127.0.0.1:0") { port in
            [
                try await pythonGET(port: port, path: "/v1/customers/\(original)"),
                try await pythonGET(port: port, path: "/v1/customers/\(account.uppercased())"),
                try await pythonGET(port: port, path: "/v1/customers/0000"),
            ]
        }
        #expect(answers.map(\.status) == [200, 200, 404])
        let profile = try #require(JSONSerialization.jsonObject(with: Data(answers[0].body.utf8)) as? [String: Any])
        let purchases = try #require(profile["purchases"] as? [[String: Any]])
        #expect(purchases.map { $0["originalTransactionId"] as? String } == [original])
        #expect((purchases.first?["why"] as? String)?.isEmpty == false)
        let timeline = try #require(profile["timeline"] as? [[String: Any]])
        let published = events.filter { $0["originalTransactionId"] as? String == original }
        #expect(timeline.filter { $0["kind"] as? String == "event" }.count == published.count, "\(timeline)")
        let instants = timeline.compactMap { $0["at"] as? Int64 }
        #expect(instants == instants.sorted(by: >), "newest first")
        let byAccount = try #require(JSONSerialization.jsonObject(with: Data(answers[1].body.utf8)) as? [String: Any])
        #expect(byAccount["matchedBy"] as? String == "appAccountToken")
        #expect((byAccount["purchases"] as? [[String: Any]])?.contains { $0["originalTransactionId"] as? String == original } == true)

        let database = bed.directory.appendingPathComponent("signet.sqlite").path
        let cli = try await SignetProcess.output(["support", "customer", original, "--database", database])
        #expect(cli.exitCode == 0, "\(cli.stderr)")
        let printed = try #require(JSONSerialization.jsonObject(with: Data(cli.stdoutText.utf8)) as? [String: Any])
        #expect((printed["purchases"] as? [[String: Any]])?.first?["why"] as? String == purchases.first?["why"] as? String)
        #expect((printed["timeline"] as? [[String: Any]])?.count == timeline.count)
        let missing = try await SignetProcess.output(["support", "customer", "0000", "--database", database])
        #expect(missing.exitCode == 1, "\(missing.stderr)")
    }

    @Test("without outbox_retention, `signet state history` prints the purchase with no events and says how to keep them")
    func historyNotKept() async throws {
        let (bed, events) = try await Self.ranBed()
        defer { bed.remove() }
        let original = try #require(events.first?["originalTransactionId"] as? String)
        let database = bed.directory.appendingPathComponent("signet.sqlite").path
        let cli = try await SignetProcess.output(["state", "history", "--database", database, "--original-transaction-id", original])
        #expect(cli.exitCode == 0, "\(cli.stderr)")
        let answer = try #require(JSONSerialization.jsonObject(with: Data(cli.stdoutText.utf8)) as? [String: Any])
        #expect((answer["events"] as? [Any])?.isEmpty == true, "\(cli.stdoutText)")
        #expect(cli.stderr.contains("no events kept for \(original)") && cli.stderr.contains("outbox_retention"), "\(cli.stderr)")
    }

    @Test("with a token (here on 127.0.0.2): 401 without it or with a wrong one, 200 with it; metrics stay open")
    func tokenRequired() async throws {
        let (bed, events) = try await Self.ranBed()
        defer { bed.remove() }
        let original = try #require(events.first?["originalTransactionId"] as? String)
        let path = "/v1/entitlements?originalTransactionId=\(original)"
        let answers = try await Self.whileRunning(bed, http: "address: 127.0.0.2:0", environment: ["SIGNET_API_TOKEN": "tok-123"]) { port in
            [
                try await pythonGET(host: "127.0.0.2", port: port, path: path),
                try await pythonGET(host: "127.0.0.2", port: port, path: path, token: "tok-124"),
                try await pythonGET(host: "127.0.0.2", port: port, path: path, token: "tok-12"),
                try await pythonGET(host: "127.0.0.2", port: port, path: path, token: "tok-123"),
                try await pythonGET(host: "127.0.0.2", port: port, path: "/v1/subscriptions/\(original)"),
                try await pythonGET(host: "127.0.0.2", port: port, path: "/metrics"),
            ]
        }
        #expect(answers.map(\.status) == [401, 401, 401, 200, 401, 200])
        #expect(answers[3].body.contains(original))
    }

    /// A bed whose store holds a consent restriction of app transaction `app-9`, as the
    /// transition stage records it for a RESCIND_CONSENT.
    static func restrictedBed() async throws -> ServiceTestBed {
        let (bed, _) = try await ranBed()
        let store = try SQLiteStateStore(path: bed.directory.appendingPathComponent("signet.sqlite").path)
        try store.withTransaction { try $0.save(ConsentRestriction(appTransactionId: "app-9", rescindedAt: 1_700_000_000_000)) }
        try store.close()
        return bed
    }

    @Test("consent: GET /v1/consent/{id} shows a RESCIND_CONSENT's restriction; without a token configured, clearing it is refused (403)")
    func consentClearingNeedsAToken() async throws {
        let bed = try await Self.restrictedBed()
        defer { bed.remove() }
        let answers = try await Self.whileRunning(bed, http: "address: 127.0.0.1:0") { port in
            [
                try await pythonGET(port: port, path: "/v1/consent/app-9"),
                try await pythonRequest("POST", port: port, path: "/v1/consent/app-9/clear"),
                try await pythonGET(port: port, path: "/v1/consent/app-9"),
                // The consumption consent ledger is written the same way: never without a token.
                try await pythonRequest("POST", port: port, path: "/v1/consumption/consent?appAccountToken=A1000000-0000-4000-8000-000000000000&consented=true"),
                try await pythonGET(port: port, path: "/v1/consumption/consent?appAccountToken=a1000000-0000-4000-8000-000000000000"),
            ]
        }
        #expect(answers.map(\.status) == [200, 403, 200, 403, 404], "\(answers)")
        for answer in [answers[0], answers[2]] {
            let body = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
            #expect(body["restricted"] as? Bool == true && body["appTransactionId"] as? String == "app-9", "\(body)")
        }
    }

    @Test("consent: POST /v1/consent/{id}/clear lifts a restriction with the token (401 without it), records who; 404 for none, 400 for another parameter")
    func consentClearing() async throws {
        let bed = try await Self.restrictedBed()
        defer { bed.remove() }
        let answers = try await Self.whileRunning(bed, http: "address: 127.0.0.2:0", environment: ["SIGNET_API_TOKEN": "tok-123"]) { port in
            [
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consent/app-9/clear?by=support"),
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consent/app-9/clear?by=support", token: "tok-124"),
                try await pythonGET(host: "127.0.0.2", port: port, path: "/v1/consent/app-9"),
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consent/app-9/clear?by=support", token: "tok-123"),
                try await pythonGET(host: "127.0.0.2", port: port, path: "/v1/consent/app-9", token: "tok-123"),
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consent/unknown/clear", token: "tok-123"),
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consent/app-9/clear?who=x", token: "tok-123"),
            ]
        }
        #expect(answers.map(\.status) == [401, 401, 401, 200, 200, 404, 400], "\(answers)")
        let cleared = try #require(try JSONSerialization.jsonObject(with: Data(answers[4].body.utf8)) as? [String: Any])
        #expect(cleared["restricted"] as? Bool == false && cleared["clearedBy"] as? String == "api: support", "\(cleared)")
    }

    @Test("consumption: the backend records consent with the token (401 without), reads it back; an older call changes nothing; the refund questions are listed as the store keeps them; bad parameters are 400")
    func consumptionConsentAndRequests() async throws {
        let (bed, _) = try await Self.ranBed()
        defer { bed.remove() }
        let future = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000
        let consent = "/v1/consumption/consent"
        let answers = try await Self.whileRunning(bed, http: "address: 127.0.0.2:0", environment: ["SIGNET_API_TOKEN": "tok-123"]) { port in
            let post = { (query: String, token: String?) in
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: consent + "?" + query, token: token)
            }
            let get = { (path: String) in try await pythonGET(host: "127.0.0.2", port: port, path: path, token: "tok-123") }
            return [
                try await post("appAccountToken=AC000000-0000-4000-8000-000000000001&consented=true&by=app&refundPreference=DECLINE", nil),
                try await post("appAccountToken=AC000000-0000-4000-8000-000000000001&consented=true&by=app&refundPreference=DECLINE", "tok-123"),
                try await get(consent + "?appAccountToken=ac000000-0000-4000-8000-000000000001"),
                try await post("appAccountToken=ac000000-0000-4000-8000-000000000001&consented=false&at=1", "tok-123"),
                try await post("appAccountToken=Ac000000-0000-4000-8000-000000000001&consented=false&by=support", "tok-123"),
                try await get(consent + "?originalTransactionId=acct-1"),
                try await post("appAccountToken=a0000000-0000-4000-8000-000000000000&originalTransactionId=b&consented=true", "tok-123"),
                try await post("appAccountToken=a0000000-0000-4000-8000-000000000000&consented=maybe", "tok-123"),
                try await post("appAccountToken=a0000000-0000-4000-8000-000000000000&consented=false&refundPreference=DECLINE", "tok-123"),
                try await post("appAccountToken=a0000000-0000-4000-8000-000000000000&consented=true&at=\(future)", "tok-123"),
                try await post("appAccountToken=a0000000-0000-4000-8000-000000000000&consented=true&refundPreference=REFUND_ALL", "tok-123"),
                try await post("appAccountToken=a0000000-0000-4000-8000-000000000000&consented=true&consented=false", "tok-123"),
                try await get("/v1/consumption/requests?since=0&limit=10000"),
                try await get("/v1/consumption/requests?since=-1"),
                try await get("/v1/consumption/requests?since=0&since=1"),
                try await pythonGET(host: "127.0.0.2", port: port, path: "/v1/consumption/requests"),
                try await get("/v1/consumption/report?since=0"),
                try await get("/v1/consumption/report?from=0"),
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consumption/usage?transactionId=t-1&consumptionPercentage=40000&by=app", token: "tok-123"),
                try await get("/v1/consumption/usage?transactionId=t-1"),
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consumption/usage?transactionId=t-1&consumptionPercentage=100001", token: "tok-123"),
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consumption/usage?transactionId=t-1&consumptionPercentage=5&deliveryStatus=UNDELIVERED_OTHER", token: "tok-123"),
                try await pythonRequest("POST", host: "127.0.0.2", port: port, path: "/v1/consumption/usage?transactionId=t-1&consumptionPercentage=5"),
                try await get("/v1/consumption/usage?transactionId=t-2"),
                try await post("appAccountToken=not-a-uuid&consented=true", "tok-123"),
                try await get(consent + "?appAccountToken=7e3fb20b4cdb47cc936d99d65f608138"),
                try await post("appAccountToken=AC000000-0000-4000-8000-000000000001&consented=true&at=1", "tok-123"),
            ]
        }
        #expect(answers.map(\.status) == [401, 200, 200, 200, 200, 404, 400, 400, 400, 400, 400, 400, 200, 400, 400, 401, 200, 400, 200, 200, 400, 400, 401, 404, 400, 400, 200], "\(answers)")
        #expect(answers[24].body.contains("must be a UUID") && answers[25].body.contains("must be a UUID"), "\(answers[24]) \(answers[25])")
        // A late retry in upper case of the first grant leaves the withdrawal standing.
        #expect(try object(26)["consented"] as? Bool == false)
        let usage = try object(19)
        #expect(usage["consumptionPercentage"] as? Int == 40_000 && usage["by"] as? String == "api: app", "\(usage)")
        #expect(answers[21].body.contains("must be 0"), "\(answers[21].body)")
        func object(_ index: Int) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(answers[index].body.utf8)) as? [String: Any])
        }
        let granted = try object(1)
        #expect(granted["consented"] as? Bool == true && granted["by"] as? String == "api: app", "\(granted)")
        #expect(granted["refundPreference"] as? String == "DECLINE" && granted["appAccountToken"] as? String == "ac000000-0000-4000-8000-000000000001", "\(granted)")
        #expect(try object(2)["at"] as? NSNumber == granted["at"] as? NSNumber)
        // `at=1` is older than the entry kept: the answer is the standing consent.
        #expect(try object(3)["consented"] as? Bool == true)
        let withdrawn = try object(4)
        #expect(withdrawn["consented"] as? Bool == false && withdrawn["by"] as? String == "api: support", "\(withdrawn)")

        // The listing is the store's: every CONSUMPTION_REQUEST of the run, pending.
        let store = try SQLiteStateStore(
            path: bed.directory.appendingPathComponent("signet.sqlite").path, options: { var o = SQLiteStateStore.Options(); o.readOnly = true; return o }())
        defer { try? store.close() }
        let kept = try store.consumptionRequests(requestedSince: 0, limit: 10_000)
        let listed = try #require(try object(12)["requests"] as? [[String: Any]])
        #expect(!kept.isEmpty, "the fixtures hold CONSUMPTION_REQUESTs")
        #expect(listed.map { $0["transactionId"] as? String } == kept.map(\.transactionId))
        #expect(listed.allSatisfy { $0["status"] as? String == "pending" && $0["deadline"] is NSNumber && $0["overdue"] is Bool })
        #expect(try store.consumptionConsent(.appAccountToken(AppAccountToken("ac000000-0000-4000-8000-000000000001")!))?.consented == false)
        // The report counts the same requests: all pending (no responder in this pipeline).
        let statuses = try #require((try object(16)["total"] as? [String: Any])?["statuses"] as? [String: Any])
        #expect(statuses["requests"] as? Int == kept.count && statuses["pending"] as? Int == kept.count, "\(statuses)")
    }

    @Test("bind policy: the API off loopback needs a token; loopback is 127.0.0.0/8, ::1, localhost", .ownThread)
    func bindPolicy() throws {
        for host in ["127.0.0.1", "127.0.0.2", "127.255.0.9", "::1", "localhost"] {
            #expect(AdminConfiguration(host: host).isLoopback, "\(host)")
            #expect(throws: Never.self) { try AdminConfiguration(host: host).validate() }
        }
        for host in ["0.0.0.0", "10.1.2.3", "192.168.1.10", "::", "127.0.0.1.example.com", "128.0.0.1"] {
            #expect(!AdminConfiguration(host: host).isLoopback, "\(host)")
            #expect(throws: AdminServerError.tokenRequired(address: "\(host):9464")) { try AdminConfiguration(host: host).validate() }
            #expect(throws: Never.self) { try AdminConfiguration(host: host, apiToken: "t").validate() }
            #expect(throws: Never.self) { try AdminConfiguration(host: host, store: nil).validate() }
        }
        #expect(AdminConfiguration.parseAddress("[::1]:80").map { "\($0.host) \($0.port)" } == "::1 80")
        #expect(AdminConfiguration.parseAddress("127.0.0.1") == nil)
        #expect(AdminConfiguration.parseAddress("127.0.0.1:70000") == nil)
    }

    @Test("signet run refuses a non-loopback http address without a token, with a clear error (exit 2)", .ownThread)
    func cliRefusesWithoutToken() throws {
        let bed = try ServiceTestBed(count: 1)
        defer { bed.remove() }
        let file = bed.directory.appendingPathComponent("p.yaml")
        try bed.pipelineYAML(input: bed.notifications, sink: "type: file\npath: \(bed.directory.path)/e.ndjson", http: "address: 0.0.0.0:0")
            .write(to: file, atomically: true, encoding: .utf8)
        let result = try SignetProcess.run(["run", "--pipeline", file.path], environment: ["SIGNET_API_TOKEN": ""])
        #expect(result.exitCode == 2)
        #expect(result.stderr.contains("SIGNET_API_TOKEN"))
        #expect(result.stderr.contains("0.0.0.0"))
    }
}
