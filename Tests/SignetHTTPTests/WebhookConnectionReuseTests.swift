import Foundation
import SignetTestSupport
import Testing

/// The `signet` binary's webhook when its connection slots run out or a client reuses its
/// connection, tried with raw sockets (Python): idle keep-alive connections make room for
/// new clients (a connection in mid-request never does), a burst of copies of one
/// notification does not hold up others, and pipelined requests are answered in order.
@Suite("webhook connection reuse against the real binary", .serialized, .timeLimit(.minutes(5)))
struct WebhookConnectionReuseTests {
    /// Python shared by the drivers: a pipeline file with `source_keys` on the webhook and an
    /// admin listener, raw requests, a reader of whole answers, and a check for a closed socket.
    static let common = #"""
        lines = open(os.path.join(folder, "notifications.ndjson")).read().splitlines()
        port, admin = free_port(), free_port()
        def serve(source_keys, drive):
            # Runs the binary with a webhook pipeline, `drive(report)` against it, then stops it
            # (whatever drive raised) and prints the report.
            process = start(webhook_pipeline(port, admin, source_keys), {}, port)
            report = {}
            try: drive(report)
            finally:
                process.terminate(); report["exit"] = process.wait(timeout=60)
            # CPU seconds of the server (the only child) and of these clients, for the figures.
            import resource
            server, clients = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
            report["cpu"] = [round(u.ru_utime + u.ru_stime, 2) for u in (server, clients)]
            print(json.dumps(report))
        def request(body, path="/notifications", extra=b""):
            if isinstance(body, str): body = body.encode()
            return b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n" % (path.encode(), extra, len(body)) + body
        def connect():
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        class Reader:
            def __init__(self, s): self.s, self.buffer = s, b""
            def fill(self):
                chunk = self.s.recv(65536)
                if not chunk: raise EOFError()
                self.buffer += chunk
            def answer(self):
                # (status line, lowercased headers, body) of the next answer; None at EOF or timeout.
                try:
                    while b"\r\n\r\n" not in self.buffer: self.fill()
                    head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
                    fields = head.decode().split("\r\n")
                    headers = {k.strip().lower(): v.strip().lower() for k, v in (f.split(":", 1) for f in fields[1:])}
                    length = int(headers.get("content-length", "0"))
                    while len(self.buffer) < length: self.fill()
                    body, self.buffer = self.buffer[:length], self.buffer[length:]
                    return fields[0], headers, body.decode()
                except (EOFError, OSError): return None
        def post(s, body, timeout=5):
            # Sends one notification and reads its answer: (status line or None, seconds, body).
            started = time.monotonic(); s.settimeout(timeout); s.sendall(request(body))
            answer = Reader(s).answer()
            return (answer[0] if answer else None), round(time.monotonic() - started, 3), (answer[2] if answer else "")
        def closed(s, seconds):
            s.settimeout(seconds)
            try: return s.recv(1) == b""
            except socket.timeout: return False
            except OSError: return True
        def evictions():
            c = http.client.HTTPConnection("127.0.0.1", admin, timeout=10); c.request("GET", "/metrics")
            text = c.getresponse().read().decode(); c.close()
            found = [l.split()[-1] for l in text.splitlines() if l.startswith('signet_http_idle_evictions_total{listener="webhook"}')]
            return float(found[0]) if found else 0

        """#

    static let idleDriver = #"""
        def drive(report):
            body = lines[0].encode(); half = len(body) // 2
            head_and_half = request(body)[:-(len(body) - half)]
            # The oldest connection is in mid-request: head and half its body.
            mid = connect(); mid.sendall(head_and_half); time.sleep(0.3)
            idle = []
            for _ in range(3):
                s = connect(); report.setdefault("idle_answers", []).append(post(s, lines[1])[0]); idle.append(s)
            # Every slot is taken (one mid-request, the others idle after their answer): a new client.
            newcomer = connect(); report["newcomer"] = post(newcomer, lines[2])[:2]
            report["idle_closed"] = [closed(s, 0.5) for s in idle]
            report["mid_closed"] = closed(mid, 0.3)
            mid.settimeout(5); mid.sendall(body[half:])
            answer = Reader(mid).answer(); report["mid_answer"] = answer[0] if answer else None
            for s in idle + [mid, newcomer]: s.close()
            time.sleep(0.5)

            # Every slot in mid-request: a new client waits until one of them is answered, then
            # that one (now idle) makes room at once.
            busy = []
            for _ in range(4):
                s = connect(); s.sendall(head_and_half); busy.append(s); time.sleep(0.1)
            time.sleep(0.3)
            waiting = connect(); waiting.settimeout(1); waiting.sendall(request(lines[3]))
            waiting_reader = Reader(waiting)
            report["waiting_before"] = waiting_reader.answer() is not None
            busy[0].settimeout(5); busy[0].sendall(body[half:])
            answer = Reader(busy[0]).answer(); report["first_busy_answer"] = answer[0] if answer else None
            started = time.monotonic(); waiting.settimeout(5)
            answer = waiting_reader.answer()
            report["waiting_after"] = [answer[0] if answer else None, round(time.monotonic() - started, 3)]
            report["first_busy_closed"] = closed(busy[0], 1)
            # Accepted into the last slot beside three in mid-request: once answered, it is the
            # idle one that keeps a slot free.
            report["waiting_closed"] = closed(waiting, 1)
            report["other_busy_answers"] = []
            for s in busy[1:]:
                report["other_busy_closed_before"] = report.get("other_busy_closed_before", False) or closed(s, 0.1)
                s.settimeout(5); s.sendall(body[half:]); answer = Reader(s).answer()
                report["other_busy_answers"].append(answer[0] if answer else None)
            report["evictions"] = evictions()
        # Four slots; read_timeout and body_timeout far above the test's bounds, so only an
        # eviction (never a timeout) can free a slot in time.
        serve(", max_connections: 4, read_timeout: 30s, body_timeout: 30s", drive)
        """#

    @Test("every slot taken: the longest-idle keep-alive connection makes room within a second, never one in mid-request")
    func idleConnectionsMakeRoom() async throws {
        let run = try await BinaryDriver.run(Self.common + Self.idleDriver, prefix: "signet-idle-evictions", fixtures: 4)
        defer { run.directory.remove() }
        let report = run.report
        #expect(report["idle_answers"] as? [String] == Array(repeating: "HTTP/1.1 200 OK", count: 3), "\(report)")
        let newcomer = try #require(report["newcomer"] as? [Any], "\(report)")
        #expect(newcomer.first as? String == "HTTP/1.1 200 OK", "\(report)\n\(run.stderr)")
        #expect((newcomer.last as? Double).map { $0 < 1 } == true, "answered within 1 s: \(newcomer)")
        let idleClosed = (report["idle_closed"] as? [Bool]) ?? []
        let closedCount = idleClosed.filter { $0 }.count
        #expect(closedCount >= 1, "an idle connection made room: \(report)")
        #expect(report["mid_closed"] as? Bool == false, "the connection in mid-request stays open: \(report)")
        #expect(report["mid_answer"] as? String == "HTTP/1.1 200 OK", "and its request is answered: \(report)")

        #expect(report["waiting_before"] as? Bool == false, "no slot while all four are in mid-request: \(report)")
        #expect(report["first_busy_answer"] as? String == "HTTP/1.1 200 OK", "\(report)")
        let waiting = try #require(report["waiting_after"] as? [Any], "\(report)")
        #expect(waiting.first as? String == "HTTP/1.1 200 OK", "\(report)\n\(run.stderr)")
        #expect((waiting.last as? Double).map { $0 < 1 } == true, "answered within 1 s of a slot turning idle: \(waiting)")
        #expect(report["first_busy_closed"] as? Bool == true, "the connection that turned idle made room: \(report)")
        #expect(report["other_busy_closed_before"] as? Bool == false, "\(report)")
        #expect(report["other_busy_answers"] as? [String] == Array(repeating: "HTTP/1.1 200 OK", count: 3), "\(report)")
        #expect(report["waiting_closed"] as? Bool == true, "\(report)")
        // Every eviction counted, and only idle connections were evicted.
        #expect(report["evictions"] as? Double == Double(closedCount + 2), "\(report)")
        #expect(report["exit"] as? Int == 0, "\(report)\n\(run.stderr)")
    }

    static let burstDriver = #"""
        copies = int(sys.argv[3])
        def drive(report):
            lock = threading.Lock(); statuses = []; bodies = []; held = []; done = threading.Event()
            gate = threading.Barrier(copies + 1)
            def copy():
                gate.wait()
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=30)
                    status, _, body = post(s, lines[0], timeout=30)
                    # Kept open after the answer, as a keep-alive client does.
                    with lock: statuses.append(status); bodies.append(body); held.append(s)
                except OSError as error:
                    with lock: statuses.append(str(error))
            legit = []
            def legitimate():
                # A new notification every 100 ms on a new connection while the burst runs.
                for body in lines[1:]:
                    if done.is_set(): break
                    try:
                        started = time.monotonic(); s = socket.create_connection(("127.0.0.1", port), timeout=5)
                        connected = round(time.monotonic() - started, 3)
                        status, _, answer = post(s, body, timeout=5); s.close()
                        # [status, committed, seconds to connect, seconds to the answer]
                        legit.append([status, '"status":"committed"' in answer, connected, round(time.monotonic() - started, 3)])
                    except OSError as error: legit.append([str(error), False, None, None])
                    time.sleep(0.1)
            threads = [threading.Thread(target=copy) for _ in range(copies)]
            for t in threads: t.start()
            side = threading.Thread(target=legitimate)
            gate.wait(); started = time.monotonic(); side.start()
            for t in threads: t.join()
            report["burst_seconds"] = round(time.monotonic() - started, 2)
            done.set(); side.join()
            for s in held: s.close()
            report["ok"] = statuses.count("HTTP/1.1 200 OK"); report["other"] = [s for s in statuses if s != "HTTP/1.1 200 OK"][:5]
            report["committed"] = sum('"status":"committed"' in b for b in bodies)
            report["duplicates"] = sum('"reason":"duplicate"' in b for b in bodies)
            report["legit"] = legit
        # The shipped settings (256 slots, read_timeout 10s, batch_linger 10ms).
        serve(", batch_linger: 10ms", drive)
        """#

    @Test("a burst of copies of one notification: all answered quickly, one event, legitimate requests beside it within 3 s, far below read_timeout")
    func burstOfCopies() async throws {
        // Fewer than the issue's 1000, still past the 256 slots: a legitimate request is accepted
        // in turn behind the copies queued before it in the listen backlog, so its wait grows
        // with the burst, and CI runs four tests at once on two cores (debug build, three
        // busy loops beside it: 300 copies 0.6-0.7 s, legitimate answers up to 0.51 s; 400
        // copies, up to 0.76 s; 1000 copies alone, 0.05-0.9 s; docs/webhook.md; a clean-clone CI
        // run with Prometheus and tmux tests beside it once took 1.6 s). Before idle connections
        // gave way, the copies past the slots waited for read_timeout (10 s): the bound of 3 s
        // tells the two apart without timing the machine.
        let copies = 300
        let run = try await BinaryDriver.run(
            Self.common + Self.burstDriver, prefix: "signet-burst", fixtures: 40, arguments: [String(copies)])
        defer { run.directory.remove() }
        let report = run.report
        print("burst: \(report)\n\(run.stderr.split(separator: "\n").last ?? "")")
        #expect(report["ok"] as? Int == copies, "\(report)\n\(run.stderr)")
        let burstSeconds = try #require(report["burst_seconds"] as? Double, "\(report)")
        #expect(burstSeconds < 5, "\(report)")
        let legit = (report["legit"] as? [[Any]]) ?? []
        #expect(!legit.isEmpty, "\(report)")
        for answer in legit {
            #expect(answer.first as? String == "HTTP/1.1 200 OK", "\(legit)")
            #expect((answer.last as? Double).map { $0 < 3 } == true, "within 3 s: \(legit)")
        }
        #expect(report["committed"] as? Int == 1 && report["duplicates"] as? Int == copies - 1, "\(report)")
        #expect(legit.allSatisfy { $0.dropFirst().first as? Bool == true }, "each legitimate one committed: \(legit)")
        #expect(report["exit"] as? Int == 0, "\(report)\n\(run.stderr)")
    }

    static let pipelineDriver = #"""
        def drive(report):
            # 100 pipelined POSTs: each of 50 notifications twice in a row, sent at once.
            s = connect(); s.settimeout(30)
            payload = b"".join(request(body) * 2 for body in lines[:50])
            sender = threading.Thread(target=s.sendall, args=(payload,)); sender.start()
            reader = Reader(s); answers = []
            for _ in range(100):
                answer = reader.answer()
                if answer is None: break
                answers.append(answer)
            sender.join()
            report["statuses"] = [a[0] for a in answers]
            report["bodies"] = [a[2] for a in answers]
            report["close_headers"] = sum(1 for a in answers if a[1].get("connection") == "close")
            report["open_after"] = not closed(s, 0.3)
            s.close()

            # Pipelined behind a request that asks to close: answered up to it, then closed.
            s = connect(); s.settimeout(10)
            s.sendall(request(lines[50]) + request(lines[51], extra=b"Connection: close\r\n") + request(lines[52]))
            reader = Reader(s); answers = []
            for _ in range(3):
                answer = reader.answer()
                if answer is None: break
                answers.append([answer[0], answer[1].get("connection")])
            report["until_close"] = answers
            report["closed_after"] = closed(s, 2)
            s.close()
            # The request behind the close was not taken: posted now, it is new, not a duplicate.
            s = connect(); report["behind_close_later"] = post(s, lines[52])[2]; s.close()
        serve("", drive)
        """#

    @Test("pipelined requests are all answered, in order, on the same connection; a Connection: close among them ends it")
    func pipelining() async throws {
        let run = try await BinaryDriver.run(Self.common + Self.pipelineDriver, prefix: "signet-pipelining", fixtures: 60)
        defer { run.directory.remove() }
        let report = run.report
        let statuses = (report["statuses"] as? [String]) ?? []
        #expect(statuses == Array(repeating: "HTTP/1.1 200 OK", count: 100), "\(report)\n\(run.stderr)")
        // In order: each notification is committed, then its copy right behind it is a duplicate.
        let bodies = (report["bodies"] as? [String]) ?? []
        for (index, body) in bodies.enumerated() {
            let expected = index.isMultiple(of: 2) ? #""status":"committed""# : #""reason":"duplicate""#
            #expect(body.contains(expected), "answer \(index): \(body)")
        }
        #expect(report["close_headers"] as? Int == 0, "\(report)")
        #expect(report["open_after"] as? Bool == true, "the connection stays open for more: \(report)")
        let untilClose = (report["until_close"] as? [[Any]]) ?? []
        #expect(untilClose.count == 2, "the request behind Connection: close is not answered: \(untilClose)")
        #expect(untilClose.first?.first as? String == "HTTP/1.1 200 OK", "\(untilClose)")
        #expect(untilClose.last?.first as? String == "HTTP/1.1 200 OK", "\(untilClose)")
        #expect(untilClose.last?.last as? String == "close", "\(untilClose)")
        #expect(report["closed_after"] as? Bool == true, "\(report)")
        let behindClose = report["behind_close_later"] as? String ?? ""
        #expect(behindClose.contains(#""status":"committed""#), "the request behind the close was not taken: \(report)")
        #expect(report["exit"] as? Int == 0, "\(report)\n\(run.stderr)")
    }
}
