import Foundation
import NIOCore
import SignetCore
import SignetHTTP
import SignetTestSupport
import Testing

/// Signed events and mutual TLS on the http sink, checked by independent receivers: the Python
/// check docs/operations.md gives (run as written), and Python's own TLS server.
@Suite("http sink: Signet-Signature (timestamp, replay window, rotation) and mutual TLS")
struct SignedEventsTests {
    /// The Python code block of docs/operations.md's "Checking `Signet-Signature`" section.
    static func documentedCheck() throws -> String {
        let docs = try String(contentsOf: FixturePaths.packageRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let section = try #require(docs.range(of: "### Checking `Signet-Signature`"))
        let rest = docs[section.upperBound...]
        let start = try #require(rest.range(of: "```python\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```"))
        return String(rest[start.upperBound..<end.lowerBound])
    }

    /// A receiver that judges every request with the documented check, under the secrets it is
    /// given, as a receiver would now, 301 s later (a replay), and with the body changed.
    static let receiverScript = #"""
import json, sys, threading, time, os
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
check, log_path = sys.argv[1], sys.argv[2]
current, previous = sys.argv[3].encode(), sys.argv[4].encode()
exec(check)
lock = threading.Lock()
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        header = self.headers.get("Signet-Signature", "")
        now = time.time()
        entry = {"header": header,
                 "current": signet_signature_ok([current], body, header),
                 "previous": signet_signature_ok([previous], body, header),
                 "stranger": signet_signature_ok([b"not-the-secret"], body, header),
                 "replayed": signet_signature_ok([current, previous], body, header, now=now + 301),
                 "tampered": signet_signature_ok([current, previous], body + b" ", header),
                 "noHeader": signet_signature_ok([current], body, None)}
        with lock:
            with open(log_path, "a") as f: f.write(json.dumps(entry) + "\n")
        ok = entry["current"] or entry["previous"]
        reply = b"ok" if ok else b"bad signature"
        self.send_response(200 if ok else 401); self.send_header("Content-Length", str(len(reply))); self.end_headers()
        self.wfile.write(reply)
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Timer(120, lambda: os._exit(0)).start()
server.serve_forever()
"""#

    /// Runs the pipeline over `count` notifications into the documented receiver holding
    /// `current` and `previous`; returns what it judged of each request.
    static func judged(sink: String, current: String, previous: String, bed: ServiceTestBed) async throws -> [[String: Any]] {
        let log = bed.directory.appendingPathComponent("judged-\(UUID().uuidString.prefix(6)).jsonl")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let child = try ChildProcess(
            ChildProcess.env, ["python3", "-c", receiverScript, try documentedCheck(), log.path, current, previous], stdin: false)
        defer { child.stop() }
        let started = child.blockingWaitUntil(timeout: .seconds(30)) { child.firstStdoutLine != nil }
        let port = try #require(started ? child.firstStdoutLine.flatMap { Int($0) } : nil, "receiver: \(child.stderrText)")
        let pipeline = try bed.load(bed.pipelineYAML(
            input: bed.notifications, sink: "type: http\nurl: http://127.0.0.1:\(port)/events\n" + sink, http: nil))
        let (runner, _, _) = try bed.service(pipeline)
        _ = try await runner.run()
        return try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test("while rotating, each request carries a v1 per secret: receivers holding either accept it; a replay 301 s later, a changed body and a stranger's secret are refused")
    func rotation() async throws {
        let bed = try ServiceTestBed(count: 12)
        defer { bed.remove() }
        let file = bed.directory.appendingPathComponent("secret")
        try "new-secret\n".write(to: file, atomically: true, encoding: .utf8)
        let judged = try await Self.judged(
            sink: "signing_secret_file: \(file.path)\nprevious_signing_secret: old-secret\n", current: "new-secret", previous: "old-secret", bed: bed)
        #expect(!judged.isEmpty)
        for entry in judged {
            #expect(entry["current"] as? Bool == true && entry["previous"] as? Bool == true, "\(entry)")
            #expect(entry["stranger"] as? Bool == false && entry["replayed"] as? Bool == false, "\(entry)")
            #expect(entry["tampered"] as? Bool == false && entry["noHeader"] as? Bool == false, "\(entry)")
            let header = try #require(entry["header"] as? String)
            #expect(header.hasPrefix("t=") && header.components(separatedBy: ",v1=").count == 3, "\(header)")
        }
    }

    @Test("after the rotation a receiver still holding only the old secret refuses (401): the sink dead-letters, it does not retry forever")
    func afterRotation() async throws {
        let bed = try ServiceTestBed(count: 6)
        defer { bed.remove() }
        let judged = try await Self.judged(sink: "signing_secret: new-secret\n", current: "other", previous: "old-secret", bed: bed)
        #expect(!judged.isEmpty && judged.allSatisfy { $0["previous"] as? Bool == false && $0["current"] as? Bool == false })
        #expect(judged.allSatisfy { ($0["header"] as? String)?.components(separatedBy: ",v1=").count == 2 })
        let deadLetters = try bed.lines("dead-letter.ndjson")
        #expect(deadLetters.count == judged.count && deadLetters.allSatisfy { $0.contains("http_rejected") }, "\(deadLetters.count) of \(judged.count)")
    }

    @Test("signing and TLS settings that cannot work are configuration errors with the key named")
    func configurationErrors() async throws {
        let bed = try ServiceTestBed(count: 1)
        defer { bed.remove() }
        let cases: [(String, String)] = [
            ("url: http://127.0.0.1:9/e\nsigning_secret: a\nsigning_secret_file: /tmp/x\n", "not both"),
            ("url: https://127.0.0.1:9/e\ntls_certificate: /tmp/c.pem\n", "go together"),
            ("url: http://127.0.0.1:9/e\ntls_certificate: /tmp/c.pem\ntls_private_key: /tmp/k.pem\n", "https://"),
            ("url: http://127.0.0.1:9/e\nprevious_signing_secret: old\n", "goes with the current one"),
        ]
        for (sink, message) in cases {
            #expect(throws: ConfigErrors.self) { _ = try bed.load(bed.pipelineYAML(input: bed.notifications, sink: "type: http\n" + sink, http: nil)) }
            do {
                _ = try bed.load(bed.pipelineYAML(input: bed.notifications, sink: "type: http\n" + sink, http: nil))
            } catch {
                #expect("\(error)".contains(message), "\(sink): \(error)")
            }
        }
        // A secret file that is missing fails when the sink opens, naming the key and the path.
        var options = HTTPSink.Options(url: "http://127.0.0.1:9/e")
        options.signingSecretFile = bed.directory.appendingPathComponent("missing").path
        let sink = HTTPSink(options: options)
        await #expect(performing: { try await sink.open() }, throws: { "\($0)".contains("signing_secret_file") && "\($0)".contains("missing") })
    }

    /// A CA, a server certificate for 127.0.0.1 and a client certificate, made with the openssl CLI.
    struct Certificates {
        let directory: URL
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        init(in directory: URL) throws {
            self.directory = directory
            func openssl(_ arguments: [String]) throws {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["openssl"] + arguments
                process.currentDirectoryURL = directory
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
                guard process.terminationStatus == 0 else { throw TestFailure("openssl \(arguments.joined(separator: " ")) failed") }
            }
            try "subjectAltName=IP:127.0.0.1\n".write(to: directory.appendingPathComponent("san.ext"), atomically: true, encoding: .utf8)
            try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Signet test CA"])
            for name in ["server", "client"] {
                try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)"])
                try openssl(["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "\(name).pem", "-days", "2"]
                    + (name == "server" ? ["-extfile", "san.ext"] : []))
            }
        }
    }

    /// Python's TLS server on 127.0.0.1 that requires a client certificate from `ca.pem`.
    static let tlsServerScript = #"""
import ssl, sys, threading, os
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
directory = sys.argv[1]
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        subject = dict(x[0] for x in self.connection.getpeercert()["subject"])
        sys.stderr.write("client " + subject.get("commonName", "?") + "\n"); sys.stderr.flush()
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(os.path.join(directory, "server.pem"), os.path.join(directory, "server.key"))
context.load_verify_locations(os.path.join(directory, "ca.pem"))
context.verify_mode = ssl.CERT_REQUIRED
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Timer(120, lambda: os._exit(0)).start()
server.serve_forever()
"""#

    @Test("mutual TLS: with the client certificate the receiver takes the event; without it the handshake is refused and the write fails after its retries")
    func mutualTLS() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-mtls")
        defer { directory.remove() }
        let certificates = try Certificates(in: directory.url)
        let server = try ChildProcess(ChildProcess.env, ["python3", "-c", Self.tlsServerScript, directory.url.path], stdin: false)
        defer { server.stop() }
        let started = await server.waitUntil(timeout: .seconds(30)) { server.firstStdoutLine != nil }
        let port = try #require(started ? server.firstStdoutLine.flatMap { Int($0) } : nil, "server: \(server.stderrText)")
        let message = OutputMessage(key: Array("k".utf8), value: Array(#"{"eventId":"e-1"}"#.utf8), headers: [])

        var options = HTTPSink.Options(url: "https://127.0.0.1:\(port)/events")
        options.tlsCA = certificates.path("ca.pem")
        options.maxRetries = 1
        options.initialBackoff = .milliseconds(10)
        options.timeout = .seconds(5)
        let anonymous = HTTPSink(options: options)
        try await anonymous.open()
        await #expect(throws: HTTPSinkError.self) { try await anonymous.write([message]) }
        try await anonymous.close()
        #expect(!server.stderrText.contains("client client"))

        options.tlsCertificate = certificates.path("client.pem")
        options.tlsPrivateKey = certificates.path("client.key")
        let authenticated = HTTPSink(options: options)
        try await authenticated.open()
        try await authenticated.write([message])
        try await authenticated.close()
        #expect(await server.waitUntil(timeout: .seconds(5)) { server.stderrText.contains("client client") }, "\(server.stderrText)")
    }
}
