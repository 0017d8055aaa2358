import Foundation
import SignetTestSupport
import Testing

/// The `signet` binary on the open internet, tried with raw sockets (Python): no early
/// answer keeps a connection open or reads a body past its limit, HTTP/1.0 closes after
/// its answer, the admin listener's idle connections cannot take the webhook off the air,
/// and a legitimate notification is answered 200 meanwhile.
@Suite("webhook deadlines against the real binary", .serialized, .timeLimit(.minutes(5)))
struct WebhookDeadlineTests {
    static let driver = #"""
        body = open(os.path.join(folder, "notifications.ndjson")).read().splitlines()[0].encode()
        port, admin = free_port(), free_port()
        pipeline = webhook_pipeline(port, admin, ", max_body_bytes: 65536", ", max_connections: 16, idle_timeout: 1s")
        process = start(pipeline, {}, port)

        def wait_closed(s, seconds):
            # Reads until EOF or reset; returns (first status line, seconds until closed) or (line, None) if still open.
            s.settimeout(0.2); start = time.time(); data = b""
            while time.time() - start < seconds:
                try:
                    chunk = s.recv(65536)
                    if not chunk: return data.split(b"\r\n")[0].decode(errors="replace"), round(time.time() - start, 2)
                    data += chunk
                except socket.timeout: continue
                except (ConnectionResetError, BrokenPipeError): return data.split(b"\r\n")[0].decode(errors="replace"), round(time.time() - start, 2)
            return data.split(b"\r\n")[0].decode(errors="replace"), None

        def legit():
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(b"POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            s.settimeout(30); data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk: break
                data += chunk
            s.close(); return data.split(b"\r\n")[0].decode()

        report = {}
        early = {
            "404": b"POST /anything HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\nab",
            "405": b"PUT /notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\nab",
            "415": b"POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000000000000\r\n\r\nab",
            "413": b"POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\nab",
        }
        for name, request in early.items():
            s = socket.create_connection(("127.0.0.1", port)); s.sendall(request)
            report[name] = wait_closed(s, 5); s.close()

        # 300 slow clients (a byte a second after the head), then a legitimate request meanwhile.
        slow = []
        for _ in range(300):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(early["404"]); slow.append(s)
            except OSError: break
        time.sleep(1)
        report["legit_with_slow_clients"] = legit()
        still_open = 0
        for s in slow:
            try:
                s.sendall(b"x")
                s.settimeout(3)
                while s.recv(65536): pass
            except socket.timeout: still_open += 1
            except OSError: pass
            s.close()
        report["slow_still_open"] = still_open

        # A fast chunked client after a 413: the server must not read without end.
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"10000\r\n" + b"x" * 65536 + b"\r\n"
        sent, start = 0, time.time()
        try:
            while time.time() - start < 10:
                s.sendall(chunk); sent += len(chunk)
        except OSError: pass
        report["chunked_sent_bytes"] = sent
        report["chunked_seconds"] = round(time.time() - start, 2)
        s.close()

        # HTTP/1.0 without keep-alive: closed right after the answer.
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /notifications HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        report["http10"] = wait_closed(s, 5); s.close()

        # The admin listener: more idle connections than its limit; the webhook keeps answering,
        # idle ones are closed after idle_timeout, then /healthz answers.
        idle = [socket.create_connection(("127.0.0.1", admin), timeout=5) for _ in range(40)]
        report["legit_with_idle_admin"] = legit()
        # 16 at a time are accepted and each closes after 1 s idle: 40 are gone after about 3 s.
        time.sleep(4.5)
        closed = 0
        for s in idle:
            s.settimeout(0.5)
            try:
                if s.recv(1) == b"": closed += 1
            except socket.timeout: pass
            except OSError: closed += 1
            s.close()
        report["idle_admin_closed"] = closed
        s = socket.create_connection(("127.0.0.1", admin), timeout=5)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); s.settimeout(5)
        report["healthz"] = s.recv(4096).split(b"\r\n")[0].decode(); s.close()

        process.terminate(); report["exit"] = process.wait(timeout=60)
        print(json.dumps(report))
        """#

    @Test("early answers close at once, HTTP/1.0 closes after its answer, admin idle connections time out; 200s meanwhile")
    func deadlines() async throws {
        let run = try await BinaryDriver.run(Self.driver, prefix: "signet-webhook-deadlines", fixtures: 4)
        defer { run.directory.remove() }
        let report = run.report, stderr = run.stderr
        for (status, line) in [("404", "404 Not Found"), ("405", "405 Method Not Allowed"), ("415", "415 Unsupported Media Type"), ("413", "413")] {
            let answer = try #require(report[status] as? [Any], "\(report)")
            #expect((answer.first as? String)?.contains(line) == true, "\(status): \(answer)")
            let seconds = answer.last as? Double
            #expect(seconds != nil && seconds! < 2.5, "\(status) must close within the linger bound: \(answer)")
        }
        #expect(report["legit_with_slow_clients"] as? String == "HTTP/1.1 200 OK", "\(report)")
        #expect(report["slow_still_open"] as? Int == 0, "\(report)")
        // The server stops reading soon after its 413: far less than 10 s of loopback bandwidth.
        #expect((report["chunked_sent_bytes"] as? Int ?? .max) < 64 << 20, "\(report)")
        #expect((report["chunked_seconds"] as? Double ?? 99) < 5, "\(report)")
        let http10 = try #require(report["http10"] as? [Any], "\(report)")
        #expect((http10.first as? String)?.contains("200") == true, "\(http10)")
        #expect((http10.last as? Double).map { $0 < 1 } == true, "HTTP/1.0 closes right after the answer: \(http10)")
        #expect(report["legit_with_idle_admin"] as? String == "HTTP/1.1 200 OK", "\(report)")
        #expect(report["idle_admin_closed"] as? Int == 40, "\(report)")
        #expect(report["healthz"] as? String == "HTTP/1.1 200 OK", "\(report)")
        #expect(report["exit"] as? Int == 0, "\(report)\n\(stderr)")
        #expect(stderr.contains("all 16 connection slots are in use"), "\(stderr)")
    }
}
