import Foundation
import SignetTestSupport
import Testing

/// The app's own call (`purchases_path`) on the shipped webhook pipeline, the binary driven
/// with curl: answered after commit with the purchase's entitlements, refused clearly when
/// forged, behind the entitlement API's bearer token.
@Suite("POST /v1/purchases: the app's call after a purchase (the binary, curl)", .serialized)
struct PurchaseEndpointTests {
    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }

    struct Answer {
        var status: Int
        var json: [String: Any]
    }

    /// POSTs `body` to `url` with curl; the status and the JSON answer.
    static func post(_ url: String, _ body: String, token: String?, in directory: TemporaryDirectory) async throws -> Answer {
        let file = directory.path("body-\(UUID().uuidString).json")
        try body.write(toFile: file, atomically: true, encoding: .utf8)
        var arguments = ["curl", "-sS", "--max-time", "30", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@\(file)"]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        arguments += ["-w", "\n%{http_code}", url]
        let command = arguments
        let result = try await offPool { try SignetProcess.run(executable: ChildProcess.env, command, timeout: 60) }
        let lines = result.stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.last ?? "") ?? -1
        let text = lines.dropLast().joined(separator: "\n")
        let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? ["raw": text]
        return Answer(status: status, json: json)
    }

    /// The shipped webhook pipeline with the purchase path on, once it answers; its webhook and
    /// operators' ports.
    static func startWebhook(
        environment fixtures: [String: String], in directory: TemporaryDirectory
    ) async throws -> (ChildProcess, port: Int, admin: Int) {
        var environment = fixtures
        let (port, admin) = (try freeLocalPort(), try freeLocalPort())
        environment["SIGNET_HTTP_ADDRESS"] = "127.0.0.1:\(port)"
        environment["SIGNET_ADMIN_ADDRESS"] = "127.0.0.1:\(admin)"
        environment["SIGNET_API_TOKEN"] = "app-backend-secret"
        environment["SIGNET_PURCHASES_PATH"] = "/v1/purchases"
        environment["SIGNET_DATA_DIR"] = directory.path("data")
        let child = try ChildProcess.signet(
            ["run", "--pipeline", FixturePaths.packageRoot.appendingPathComponent("Pipelines/webhook.yaml").path],
            environment: environment, stdin: false)
        var up = false
        for _ in 0..<300 where !up {
            up = (try? await Self.post("http://127.0.0.1:\(port)/v1/purchases", "{}", token: nil, in: directory))?.status == 401
            if !up { try await Task.sleep(for: .milliseconds(100)) }
        }
        if !up {
            child.stop()
            throw StartFailure(description: "the webhook did not come up: \(child.stderrTail())")
        }
        return (child, port, admin)
    }

    @Test("another app's transactions relayed by the backend (issue 53): each is 422, but the instance stays ready and is not reported misconfigured; they are counted apart")
    func relayedForeignTransactionsKeepTheInstanceReady() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-purchases")
        defer { directory.remove() }
        let ours = try await SignetProcess.output(["fixtures", "--out", directory.path("fixtures"), "--count", "3"], timeout: 120)
        try #require(ours.exitCode == 0, "\(ours.stderr)")
        // Another app's transactions, signed under the same (trusted) chain.
        try FileManager.default.createDirectory(atPath: directory.path("other"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: directory.path("fixtures/pki"), toPath: directory.path("other/pki"))
        let theirs = try await SignetProcess.output(
            ["fixtures", "--out", directory.path("other"), "--count", "25", "--seed", "5", "--bundle-id", "com.other.app"], timeout: 120)
        try #require(theirs.exitCode == 0, "\(theirs.stderr)")
        let foreign = try String(contentsOfFile: directory.path("other/transactions.ndjson"), encoding: .utf8).split(separator: "\n")
        try #require(!foreign.isEmpty)

        let (child, port, admin) = try await Self.startWebhook(environment: try FixturesEnvironment.read(directory.path("fixtures")), in: directory)
        defer { child.stop() }
        // 20 in a row (a few transactions, each sent several times, as a looping client would).
        for index in 0..<20 {
            let line = foreign[index % foreign.count]
            let answer = try await Self.post("http://127.0.0.1:\(port)/v1/purchases", String(line), token: "app-backend-secret", in: directory)
            #expect(answer.status == 422 && answer.json["reason"] as? String == "bundle_id_mismatch", "\(answer.json)")
        }
        let ready = try await offPool {
            try SignetProcess.run(executable: ChildProcess.env, ["curl", "-sS", "-w", "\n%{http_code}", "http://127.0.0.1:\(admin)/readyz"], timeout: 30)
        }
        #expect(ready.stdoutText.hasSuffix("200"), "\(ready.stdoutText)")
        let metrics = try await offPool {
            try SignetProcess.run(executable: ChildProcess.env, ["curl", "-sS", "http://127.0.0.1:\(admin)/metrics"], timeout: 30)
        }.stdoutText
        let lines = metrics.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("signet_misconfigured ") && Double($0.split(separator: " ").last ?? "") == 0 }, "\(lines.filter { $0.contains("misconfigured") })")
        #expect(lines.contains { $0.hasPrefix("signet_relayed_rejections_total{") && $0.contains("bundle_id_mismatch") && Double($0.split(separator: " ").last ?? "") == 20 },
                "\(lines.filter { $0.contains("relayed") })")
        #expect(!lines.contains { $0.hasPrefix("signet_configuration_rejections_total{") && Double($0.split(separator: " ").last ?? "") != 0 })
        #expect(!child.stderrText.contains("Apple does not send them again"), "\(child.stderrText)")
        child.send(SIGTERM)
        #expect(await child.exit(within: .seconds(60)) == 0, "\(child.stderrTail())")
    }

    /// The payload of a compact JWS, decoded without checking anything (test input only).
    static func unverifiedPayload(_ jws: String) throws -> [String: Any] {
        var part = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while part.count % 4 != 0 { part += "=" }
        let data = try #require(Data(base64Encoded: part))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("issue 53: a notification's or a renewal info's JWS posted as signedTransaction is malformed_payload saying what it is (not bundle_id_mismatch); a non-object body names signedTransaction; dead letters name the purchase path")
    func wrongKindsAreNamed() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-purchases")
        defer { directory.remove() }
        let fixtures = try await SignetProcess.output(["fixtures", "--out", directory.path("fixtures"), "--count", "6"], timeout: 120)
        try #require(fixtures.exitCode == 0, "\(fixtures.stderr)")
        let notificationLine = try #require(
            try String(contentsOfFile: directory.path("fixtures/notifications.ndjson"), encoding: .utf8).split(separator: "\n").first)
        let notificationJWS = try #require((try JSONSerialization.jsonObject(with: Data(notificationLine.utf8)) as? [String: String])?["signedPayload"])
        let renewalJWS = try #require(
            try String(contentsOfFile: directory.path("fixtures/notifications.ndjson"), encoding: .utf8).split(separator: "\n").lazy
                .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String])?["signedPayload"] }
                .compactMap { try? (Self.unverifiedPayload($0)["data"] as? [String: Any])?["signedRenewalInfo"] as? String }.first)

        let (child, port, _) = try await Self.startWebhook(environment: try FixturesEnvironment.read(directory.path("fixtures")), in: directory)
        defer { child.stop() }
        let url = "http://127.0.0.1:\(port)/v1/purchases"
        for (jws, says) in [(notificationJWS, "a notification"), (renewalJWS, "signedRenewalInfo")] {
            let answer = try await Self.post(url, #"{"signedTransaction":"\#(jws)"}"#, token: "app-backend-secret", in: directory)
            #expect(answer.status == 422 && answer.json["reason"] as? String == "malformed_payload", "\(answer.json)")
            #expect((answer.json["detail"] as? String)?.contains(says) == true, "\(answer.json)")
        }
        let notObject = try await Self.post(url, "[1]", token: "app-backend-secret", in: directory)
        #expect(notObject.status == 400 && (notObject.json["detail"] as? String)?.contains("signedTransaction") == true, "\(notObject.json)")
        child.send(SIGTERM)
        #expect(await child.exit(within: .seconds(60)) == 0, "\(child.stderrTail())")
        let dead = try String(contentsOfFile: directory.path("data/dead-letter.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(dead.count == 2 && dead.allSatisfy { $0.contains(#""stream":"http:\/v1\/purchases""#) || $0.contains(#""stream":"http:/v1/purchases""#) }, "\(dead)")
        #expect(!child.stderrText.contains("Apple does not send them again"))
    }

    @Test("a verified transaction is answered after commit with its entitlements; forged is 422 with the reason; no token is 401; a notification body is 400")
    func purchaseFlow() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-purchases")
        defer { directory.remove() }
        let fixtures = try await SignetProcess.output(["fixtures", "--out", directory.path("fixtures"), "--count", "3"], timeout: 120)
        try #require(fixtures.exitCode == 0, "\(fixtures.stderr)")
        let environment = try FixturesEnvironment.read(directory.path("fixtures"))
        let transactionLine = try #require(
            try String(contentsOfFile: directory.path("fixtures/transactions.ndjson"), encoding: .utf8).split(separator: "\n").first)
        let notificationLine = try #require(
            try String(contentsOfFile: directory.path("fixtures/notifications.ndjson"), encoding: .utf8).split(separator: "\n").first)

        let (child, port, _) = try await Self.startWebhook(environment: environment, in: directory)
        defer { child.stop() }
        let url = "http://127.0.0.1:\(port)/v1/purchases"

        let transaction = String(transactionLine)
        let anonymous = try await Self.post(url, transaction, token: nil, in: directory)
        #expect(anonymous.status == 401)
        let wrong = try await Self.post(url, transaction, token: "guess", in: directory)
        #expect(wrong.status == 401)

        let granted = try await Self.post(url, transaction, token: "app-backend-secret", in: directory)
        #expect(granted.status == 200, "\(granted.json)")
        #expect(granted.json["status"] as? String == "committed")
        let purchase = try #require(granted.json["originalTransactionId"] as? String)
        let entitlements = try #require(granted.json["entitlements"] as? [[String: Any]], "\(granted.json)")
        #expect(entitlements.count == 1)
        #expect(entitlements.first?["originalTransactionId"] as? String == purchase)
        #expect(entitlements.first?["entitled"] is Bool, "\(entitlements)")

        // The app retries (it did not hear the answer): the same purchase, nothing new.
        let again = try await Self.post(url, transaction, token: "app-backend-secret", in: directory)
        #expect(again.status == 200)
        #expect(again.json["status"] as? String == "dropped")
        #expect((again.json["entitlements"] as? [[String: Any]])?.first?["state"] as? String == entitlements.first?["state"] as? String)

        // A signature changed in its middle: verified by nobody, granted nothing.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(transaction.utf8)) as? [String: String])
        var jws = Array(try #require(object["signedTransaction"]))
        let middle = jws.count - 20
        jws[middle] = jws[middle] == "A" ? "B" : "A"
        let forged = try await Self.post(url, #"{"signedTransaction":"\#(String(jws))"}"#, token: "app-backend-secret", in: directory)
        #expect(forged.status == 422, "\(forged.json)")
        #expect(forged.json["status"] as? String == "rejected")
        #expect(forged.json["reason"] as? String == "invalid_signature", "\(forged.json)")

        let notification = try await Self.post(url, String(notificationLine), token: "app-backend-secret", in: directory)
        #expect(notification.status == 400, "\(notification.json)")
        #expect(notification.json["error"] as? String == "not_a_transaction")
        // Apple's path is untouched by all this, and needs no token.
        let apple = try await Self.post("http://127.0.0.1:\(port)/notifications", String(notificationLine), token: nil, in: directory)
        #expect(apple.status == 200, "\(apple.json)")

        child.send(SIGTERM)
        #expect(await child.exit(within: .seconds(60)) == 0, "\(child.stderrTail())")
        // One grant for the purchase, from the app's call (the fixture is dated in the past, so
        // the expiry sweep may also end it by time: `source: clock`, not an input's doing).
        let events = child.stdoutText.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        let forPurchase = events.filter { $0["originalTransactionId"] as? String == purchase && $0["source"] as? String != "clock" }
        #expect(forPurchase.map { $0["type"] as? String } == ["granted"])
        #expect(forPurchase.first?["source"] as? String == "app_transaction")
        // The answer is the entitlement API's: `signet entitlements` on the same store says the same.
        let cli = try await SignetProcess.output(
            ["entitlements", "--original-transaction-id", purchase], environment: ["SIGNET_DATA_DIR": directory.path("data")], timeout: 60)
        let stored = (try? JSONSerialization.jsonObject(with: Data(cli.stdoutText.utf8))) as? [[String: Any]]
        #expect(stored?.first?["state"] as? String == entitlements.first?["state"] as? String, "\(cli.stdoutText)")
        #expect(stored?.first?["entitled"] as? Bool == entitlements.first?["entitled"] as? Bool)
    }

    @Test("purchases_path off loopback without a token, or without a store, is refused at start")
    func refusedWithoutTokenOrStore() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-purchases")
        defer { directory.remove() }
        func lint(_ address: String, stores: Bool) async throws -> SignetProcess.Result {
            let pipeline = """
                \(stores ? "stores:\n  default:\n    type: memory\n" : "")source:
                  type: http
                  address: \(address)
                  purchases_path: /v1/purchases
                stages:
                  - type: decode
                sinks:
                  out:
                    type: stdout
                dead_letter:
                  type: stdout
                """
            let file = directory.path("pipeline-\(UUID().uuidString).yaml")
            try pipeline.write(toFile: file, atomically: true, encoding: .utf8)
            return try await SignetProcess.output(["lint", file], environment: [:], timeout: 60)
        }
        let open = try await lint("0.0.0.0:0", stores: true)
        #expect(open.exitCode != 0)
        #expect((open.stderr + open.stdoutText).contains("needs a bearer token"), "\(open.stderr)\(open.stdoutText)")
        let storeless = try await lint("127.0.0.1:0", stores: false)
        #expect(storeless.exitCode != 0)
        #expect((storeless.stderr + storeless.stdoutText).contains("declare one under stores:"), "\(storeless.stderr)\(storeless.stdoutText)")
        let fine = try await lint("127.0.0.1:0", stores: true)
        #expect(fine.exitCode == 0, "\(fine.stderr)\(fine.stdoutText)")
    }
}
