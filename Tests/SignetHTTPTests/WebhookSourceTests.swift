import Foundation
import SignetCore
import SignetHTTP
import SignetTestSupport
import Testing

/// The `http` source with a real server on 127.0.0.1, the full chain behind it, and
/// independent clients (curl, Python's http.client and raw sockets).
@Suite("http source (webhook)", .serialized, .timeLimit(.minutes(10)))
struct WebhookSourceTests {
    @Test("200 only once committed; retries deduplicated; forged input dead-lettered and answered 200")
    func acknowledgedAfterCommit() async throws {
        let harness = try await WebhookHarness(count: 4)
        let first = try await Curl.request(harness.url, body: harness.notifications[0])
        #expect(first.status == 200, "\(first.body)")
        #expect(first.body.contains(#""status":"committed""#), "\(first.body)")
        // The answer came after the commit: the record is counted and its event is in the file.
        #expect(harness.source.statistics.committed == 1)
        let events = try harness.eventLines()
        #expect(!events.isEmpty)

        let retry = try await Curl.request(harness.url, body: harness.notifications[0])
        #expect(retry.status == 200)
        #expect(retry.body.contains(#""status":"dropped","reason":"duplicate""#), "\(retry.body)")
        #expect(try harness.eventLines() == events, "Apple's retry emits nothing new")

        let forged = try await Curl.request(harness.url, body: harness.forged[0])
        #expect(forged.status == 200, "a notification that can never verify is not retried forever")
        #expect(forged.body.contains(#""status":"dead_lettered""#), "the answer says what became of it: \(forged.body)")
        let dead = try harness.deadLetters()
        #expect(dead.count == 1)
        #expect(dead.first?.contains("\"reason\"") == true)

        // Shaped like an object but not JSON: the pipeline's decode dead-letters it with its reason.
        let malformed = try await Curl.request(harness.url, body: "{oops}")
        #expect(malformed.status == 200)
        #expect(malformed.body.contains(#""reason":"malformed_json""#), "\(malformed.body)")
        let deadAfter = try harness.deadLetters()
        #expect(deadAfter.count == 2)
        #expect(deadAfter.last?.contains("malformed_json") == true, "\(deadAfter.last ?? "")")

        let summary = try await harness.finish()
        #expect(summary.read == 4)
        #expect(summary.rejected == 2)
    }

    @Test("404, 405, 413, 415, 400: refused before the pipeline")
    func refusals() async throws {
        let harness = try await WebhookHarness(count: 1, sourceKeys: "  max_body_bytes: 4096")
        let wrongPath = try await Curl.request("http://127.0.0.1:\(harness.port)/other", body: harness.notifications[0])
        #expect(wrongPath.status == 404)
        let wrongMethod = try await Curl.request(harness.url, method: "GET", body: nil)
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers.lowercased().contains("allow: post"))
        let large = try await Curl.request(harness.url, body: "{\"signedPayload\": \"" + String(repeating: "a", count: 10_000) + "\"}")
        #expect(large.status == 413)
        let chunked = try await Curl.request(
            harness.url, body: "{\"signedPayload\": \"" + String(repeating: "a", count: 10_000) + "\"}",
            headers: ["Content-Type: application/json", "Transfer-Encoding: chunked"])
        #expect(chunked.status == 413, "a body without Content-Length is counted as it streams")
        let text = try await Curl.request(harness.url, body: "hello", headers: ["Content-Type: text/plain"])
        #expect(text.status == 415)
        let notJSON = try await Curl.request(harness.url, body: "{not json")
        #expect(notJSON.status == 400)
        let array = try await Curl.request(harness.url, body: "[1, 2]")
        #expect(array.status == 400)
        let empty = try await Curl.request(harness.url, body: "")
        #expect(empty.status == 400)
        let summary = try await harness.finish()
        #expect(summary.read == 0, "nothing refused reaches the pipeline")
        #expect(try harness.deadLetters().isEmpty)
    }

    @Test("many concurrent requests share commits (group commit); all answered 200")
    func groupCommit() async throws {
        let harness = try await WebhookHarness(count: 200)
        // 32 keep-alive connections, each posting its share back to back.
        let commits = try await postEveryNotification(to: harness, count: 200, client: """
            def worker(chunk):
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                for body in chunk:
                    connection.request("POST", "/notifications", body, {"Content-Type": "application/json"})
                    response = connection.getresponse()
                    response.read()
                    with lock: statuses.append(response.status)
            threads = [threading.Thread(target=worker, args=(bodies[i::32],)) for i in range(32)]
            """)
        #expect(commits < 200, "commits: \(commits)")
        _ = try await harness.finish()
    }

    @Test("batch_linger: a steady trickle of requests shares commits instead of paying one each")
    func lingerGroupsATrickle() async throws {
        let harness = try await WebhookHarness(count: 40, sourceKeys: "  batch_linger: 60ms")
        // One request every 10 ms, each on its own connection, as Apple's trickle arrives.
        let commits = try await postEveryNotification(to: harness, count: 40, client: """
            start = time.monotonic() + 0.2
            def post(index, body):
                time.sleep(max(0, start + index * 0.01 - time.monotonic()))
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                connection.request("POST", "/notifications", body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                with lock: statuses.append(response.status)
            threads = [threading.Thread(target=post, args=(i, body)) for i, body in enumerate(bodies)]
            """)
        // About six requests arrive within each 60 ms linger: far fewer commits than requests
        // (32 of 40 with batch_linger 0s).
        #expect(commits <= 20, "commits: \(commits)")
        _ = try await harness.finish()
    }

    /// Runs `client` (Python that fills `threads` to post every line of `bodies`, appending each
    /// answer's status to `statuses` under `lock`), expects every one of the `count`
    /// notifications answered 200 and committed, and returns the group commits it took.
    private func postEveryNotification(to harness: WebhookHarness, count: Int, client: String) async throws -> Int {
        let script = """
            import http.client, json, sys, threading, time
            port, path = int(sys.argv[1]), sys.argv[2]
            bodies = open(path).read().splitlines()
            statuses = []
            lock = threading.Lock()
            \(client)
            for t in threads: t.start()
            for t in threads: t.join()
            print(json.dumps({"ok": statuses.count(200), "all": len(statuses)}))
            """
        let result = try await Blocking.python(script, [String(harness.port), harness.directory.path("notifications.ndjson")])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("\"ok\": \(count), \"all\": \(count)"), "\(result.output)")
        let statistics = harness.source.statistics
        #expect(statistics.committed == count)
        return statistics.commits
    }

    @Test("a client that hangs up before the answer: its record is still committed")
    func hangUpStillCommits() async throws {
        let harness = try await WebhookHarness(count: 1)
        let script = """
            import socket, sys
            body = open(sys.argv[2], "rb").read().splitlines()[0]
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            s.sendall(b"POST /notifications HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
            s.close()
            print("sent")
            """
        let result = try await Blocking.python(script, [String(harness.port), harness.directory.path("notifications.ndjson")])
        #expect(result.output.contains("sent"))
        for _ in 0..<500 where harness.source.statistics.committed < 1 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(harness.source.statistics.committed == 1)
        let events = try harness.eventLines()
        #expect(!events.isEmpty)
        let retry = try await Curl.request(harness.url, body: harness.notifications[0])
        #expect(retry.status == 200)
        #expect(try harness.eventLines() == events, "the retry of a committed notification is dropped by dedupe")
        _ = try await harness.finish()
    }

    @Test("slow clients are cut off: headers within read_timeout, body within body_timeout")
    func slowClients() async throws {
        let harness = try await WebhookHarness(count: 1, sourceKeys: "  read_timeout: 300ms\n  body_timeout: 500ms")
        let script = """
            import socket, sys, time
            port = int(sys.argv[1])
            def closed_within(payload, seconds):
                s = socket.create_connection(("127.0.0.1", port))
                s.settimeout(seconds)
                s.sendall(payload)
                start = time.time()
                try:
                    while True:
                        data = s.recv(4096)
                        if not data: return "closed"
                except socket.timeout:
                    return "open"
                except ConnectionResetError:
                    return "closed"
            print("headers", closed_within(b"POST /notifications HTTP/1.1\\r\\nHost: x\\r\\n", 10))
            print("body", closed_within(b"POST /notifications HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: 1000\\r\\n\\r\\n{", 10))
            """
        let result = try await Blocking.python(script, [String(harness.port)])
        #expect(result.output.contains("headers closed"), "\(result.output)")
        #expect(result.output.contains("body closed"), "\(result.output)")
        let ok = try await Curl.request(harness.url, body: harness.notifications[0])
        #expect(ok.status == 200, "the server still serves others")
        _ = try await harness.finish()
    }
}
