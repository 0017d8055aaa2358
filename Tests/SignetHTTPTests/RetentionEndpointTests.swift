import Foundation
import SignetTestSupport
import Testing

/// Apple's Get Retention Message requests answered by the `signet` binary on its webhook
/// listener (a `retention:` section), driven with Python's http.client: every request of
/// `signet fixtures` gets the answer its purchase's stored state calls for (read back with
/// `signet state show`), every refused one 403 without a body, and the metrics count both.
@Suite("retention: Apple's real-time requests answered from the store (the binary)")
struct RetentionEndpointTests {
    static let script = #"""
        import base64
        port, admin = free_port(), free_port()
        path = webhook_pipeline(port, admin)
        # app_apple_id: the realtime fixtures' own (1234567890), so another app's request is refused.
        text = open(path).read().replace("bundle_id: com.example.signet }", "bundle_id: com.example.signet, app_apple_id: 1234567890 }")
        # The default message written upper-case: Apple is answered lower-case UUIDs.
        text += """
        retention:
          path: /retention
          default_message: 0D6A8F2E-3F4B-4C55-9A1E-2B7C8D9E0F11
          rules:
            - name: retry
              when: { state: [billing_retry, grace_period] }
              message: 11111111-2222-4333-8444-555555555555
            - name: switch
              when: { state: [active], environment: [Sandbox] }
              alternate_product: { message: 66666666-7777-4888-8999-aaaaaaaaaaaa, product: com.example.signet.yearly, billing_plan_type: MONTHLY }
        """
        open(path, "w").write(text)
        process = start(path, {}, port)
        report = {"answers": [], "refused": [], "unknown": []}
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            def post(route, body):
                connection.request("POST", route, body=body, headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                return response.status, response.getheader("Content-Type"), response.read().decode()
            for line in open(os.path.join(folder, "notifications.ndjson")):
                status, _, body = post("/notifications", line.strip())
                assert status == 200, (status, body)
            def claims(line):
                jws = json.loads(line)["signedPayload"]
                part = jws.split(".")[1]
                return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
            for line in open(os.path.join(folder, "realtime-requests.ndjson")):
                status, media, body = post("/retention", line.strip())
                purchase = claims(line)["originalTransactionId"]
                shown = subprocess.run([binary, "state", "show", "--database", os.path.join(folder, "data", "signet.sqlite"),
                                        "--original-transaction-id", purchase], capture_output=True, text=True)
                state = json.loads(shown.stdout)["state"] if shown.returncode == 0 else None
                report["answers"].append({"status": status, "media": media, "body": body, "state": state, "purchase": purchase})
            for line in open(os.path.join(folder, "realtime-refused.ndjson")):
                status, media, body = post("/retention", line.strip())
                report["refused"].append({"status": status, "media": media, "body": body})
            for line in open(os.path.join(folder, "other", "realtime-requests.ndjson")):
                status, media, body = post("/retention", line.strip())
                report["unknown"].append({"status": status, "body": body})
            metrics = http.client.HTTPConnection("127.0.0.1", admin, timeout=30)
            metrics.request("GET", "/metrics")
            report["metrics"] = [l for l in metrics.getresponse().read().decode().split("\n") if l.startswith("signet_retention_")]
        finally:
            process.terminate()
            report["exit"] = process.wait(timeout=60)
        print(json.dumps(report))
        """#

    @Test("each request answered as its purchase's stored state calls for; forged, foreign and malformed ones 403 without a body; unknown purchases the default; counted by result and reason")
    func answersFromTheStore() async throws {
        // A second fixture set under the same PKI (trusted): purchases this store never saw.
        let driver = try await BinaryDriver.run(
            """
            import shutil
            shutil.copytree(os.path.join(folder, "pki"), os.path.join(folder, "other", "pki"))
            subprocess.run([binary, "fixtures", "--out", os.path.join(folder, "other"), "--count", "4", "--seed", "91"], check=True,
                           capture_output=True)

            """ + Self.script, prefix: "signet-retention", fixtures: 40)
        defer { driver.directory.remove() }
        let report = driver.report
        let answers = try #require(report["answers"] as? [[String: Any]], "\(report)")
        try #require(answers.count >= 10, "\(answers.count) requests")
        var kinds: [String: Int] = [:]
        for answer in answers {
            #expect(answer["status"] as? Int == 200, "\(answer)")
            #expect(answer["media"] as? String == "application/json", "\(answer)")
            let body = try #require(try JSONSerialization.jsonObject(with: Data((answer["body"] as? String ?? "").utf8)) as? [String: Any], "\(answer)")
            #expect(body.count == 1, "exactly one variant: \(body)")
            let state = answer["state"] as? String
            switch state {
            case "billing_retry", "grace_period":
                #expect((body["message"] as? [String: String]) == ["messageIdentifier": "11111111-2222-4333-8444-555555555555"], "\(answer)")
                kinds["retry", default: 0] += 1
            case "active":
                #expect(
                    (body["alternateProduct"] as? [String: String]) == [
                        "messageIdentifier": "66666666-7777-4888-8999-aaaaaaaaaaaa", "productId": "com.example.signet.yearly",
                        "billingPlanType": "MONTHLY",
                    ], "\(answer)")
                kinds["switch", default: 0] += 1
            default:
                #expect((body["message"] as? [String: String]) == ["messageIdentifier": "0d6a8f2e-3f4b-4c55-9a1e-2b7c8d9e0f11"], "\(answer)")
                // No stored snapshot (a purchase whose every notification was refused): unknown.
                kinds[state == nil ? "unknown" : "default", default: 0] += 1
            }
        }
        // The fixtures hold purchases in each of the three cases.
        #expect(kinds["retry"] != nil && kinds["switch"] != nil && kinds["default"] != nil, "\(kinds)")

        let refused = try #require(report["refused"] as? [[String: Any]])
        #expect(refused.count == 7)
        for answer in refused {
            #expect(answer["status"] as? Int == 403 && (answer["body"] as? String)?.isEmpty == true, "\(answer)")
        }
        let unknown = try #require(report["unknown"] as? [[String: Any]])
        #expect(!unknown.isEmpty)
        for answer in unknown {
            #expect(answer["status"] as? Int == 200 && (answer["body"] as? String)?.contains("0d6a8f2e-3f4b-4c55-9a1e-2b7c8d9e0f11") == true, "\(answer)")
        }

        let metrics = (report["metrics"] as? [String]) ?? []
        func value(_ prefix: String) -> Double {
            metrics.filter { $0.hasPrefix(prefix) }.compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
        }
        #expect(value(#"signet_retention_requests_total{result="answered",reason="retry"}"#) == Double(kinds["retry"] ?? 0), "\(metrics)")
        #expect(value(#"signet_retention_requests_total{result="answered",reason="switch"}"#) == Double(kinds["switch"] ?? 0), "\(metrics)")
        #expect(value(#"signet_retention_requests_total{result="default",reason="no_rule"}"#) == Double(kinds["default"] ?? 0), "\(metrics)")
        #expect(value(#"signet_retention_requests_total{result="default",reason="unknown_purchase"}"#) == Double(unknown.count + (kinds["unknown"] ?? 0)), "\(metrics)")
        #expect(value(#"signet_retention_requests_total{result="refused",reason="malformed_payload"}"#) == 2, "\(metrics)")
        for reason in ["app_apple_id_mismatch", "environment_mismatch", "invalid_signature", "invalid_certificate_chain", "malformed_json"] {
            #expect(value(#"signet_retention_requests_total{result="refused",reason="\#(reason)"}"#) == 1, "\(reason): \(metrics)")
        }
        // Born at 0: a series the run never used is there all the same.
        #expect(metrics.contains { $0.hasPrefix(#"signet_retention_requests_total{result="default",reason="timeout"} 0"#) }, "\(metrics)")
        #expect(value("signet_retention_decision_seconds_count") == Double(answers.count + refused.count + unknown.count), "\(metrics)")
        #expect(report["exit"] as? Int == 0, "\(driver.stderr)")
    }
}
