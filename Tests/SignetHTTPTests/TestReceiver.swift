import Foundation
import SignetTestSupport

/// A real HTTP server on 127.0.0.1 (Python's http.server) that plays a scripted list
/// of answers to the http sink: `"503"`, `"400"`, `"timeout"` (answers 200 after 2 s,
/// past the sink's timeout), `"hold"` (waits until ``release()``), then 200 for the
/// rest. Every request is logged as JSON (body, headers, whether the
/// X-Signet-Signature checks out with Python's own hmac). It exits by itself after 120 s.
final class TestReceiver {
    let port: Int
    let log: URL
    private let releaseFile: URL
    private let process: ChildProcess

    static let script = #"""
import hmac, hashlib, json, os, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
plan, log_path, release_path, secret = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].encode()
lock = threading.Lock()
count = [0]
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            n = count[0]; count[0] += 1
        action = plan[n] if n < len(plan) else "200"
        signature = self.headers.get("X-Signet-Signature", "")
        expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        entry = {"n": n, "action": action, "body": body.decode(), "signature_ok": hmac.compare_digest(signature, expected),
                 "content_type": self.headers.get("Content-Type"), "event_id": self.headers.get("X-Signet-Event-Id")}
        if action == "timeout": time.sleep(2); action = "200"
        if action == "hold":
            open(release_path + ".held", "a").close()
            deadline = time.time() + 60
            while not os.path.exists(release_path) and time.time() < deadline: time.sleep(0.05)
            action = "200"
        with lock:
            with open(log_path, "a") as f: f.write(json.dumps(entry) + "\n")
        try:
            reply = b"nope" if action != "200" else b"ok"
            self.send_response(int(action)); self.send_header("Content-Length", str(len(reply))); self.end_headers()
            self.wfile.write(reply)
        except (BrokenPipeError, ConnectionResetError): pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Timer(120, lambda: os._exit(0)).start()
server.serve_forever()
"""#

    init(plan: [String], secret: String = "", directory: URL) throws {
        log = directory.appendingPathComponent("receiver-\(UUID().uuidString.prefix(6)).jsonl")
        releaseFile = directory.appendingPathComponent("release-\(UUID().uuidString.prefix(6))")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let planJSON = String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)
        let child = try ChildProcess(
            ChildProcess.env, ["python3", "-c", Self.script, planJSON, log.path, releaseFile.path, secret], stdin: false)
        let started = child.blockingWaitUntil(timeout: .seconds(30)) { child.firstStdoutLine != nil }
        guard started, let port = child.firstStdoutLine.flatMap({ Int($0) }) else {
            child.stop()
            throw TestFailure("the receiver did not print its port; stderr: \(child.stderrText)")
        }
        process = child
        self.port = port
    }

    var url: String { "http://127.0.0.1:\(port)/events" }

    /// A closure that lets every held request answer 200.
    var releaser: @Sendable () -> Void {
        let path = releaseFile.path
        return { _ = FileManager.default.createFile(atPath: path, contents: Data()) }
    }

    /// Whether a request is being held (a "hold" step of the plan was reached).
    var isHolding: Bool { FileManager.default.fileExists(atPath: releaseFile.path + ".held") }

    /// Every request received so far, in order of answer.
    func requests() throws -> [[String: Any]] {
        let text = try String(contentsOf: log, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw TestFailure("bad log line: \(line)")
            }
            return object
        }
    }

    /// Kills the server (SIGKILL: a child spawned from a test thread may inherit a mask that blocks SIGTERM).
    func stop() {
        process.stop()
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
