import Foundation

/// An HTTP server on 127.0.0.1 (python3's http.server) answering every POST and GET with the
/// same status and body: the OCSP responses `openssl ocsp` never sends (tryLater,
/// internalError, crafted bytes), or a CRL. ``requestCount`` counts the requests it answered.
public final class FixedHTTPResponder: Sendable {
    public let port: Int
    private let process: ChildProcess

    public var url: String { "http://127.0.0.1:\(port)/" }

    private static let script = """
        import http.server, sys
        port, status, body = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3], 'rb').read()
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get('Content-Length', '0')))
                self.answer()
            def do_GET(self):
                self.answer()
            def answer(self):
                self.send_response(status)
                self.send_header('Content-Type', 'application/ocsp-response')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                sys.stderr.write('request\\n'); sys.stderr.flush()
        server = http.server.HTTPServer(('127.0.0.1', port), Handler)
        sys.stderr.write('ready\\n'); sys.stderr.flush()
        server.serve_forever()
        """

    /// Starts the server answering `status` with `body`, on `port` (nil: a free one).
    public init(status: Int = 200, body: [UInt8], port: Int? = nil) async throws {
        // The body goes through a file: an argument holds at most 128 KiB.
        let bodyURL = FileManager.default.temporaryDirectory.appendingPathComponent("signet-fixed-\(UUID().uuidString).bin")
        try Data(body).write(to: bodyURL)
        defer { try? FileManager.default.removeItem(at: bodyURL) }
        (self.port, self.process) = try await Self.startPython(script: Self.script, port: port) { [String(status), bodyURL.path] }
    }

    /// Starts `python3 -c script PORT extra...` on `port` (nil: a free one, three tries) and
    /// waits until it writes `ready` on stderr: the python3 servers of the test support.
    static func startPython(script: String, port: Int?, extra: () -> [String]) async throws -> (Int, ChildProcess) {
        var lastError = ""
        for _ in 0..<3 {
            let port = try port ?? freeLocalPort()
            let process = try ChildProcess(ChildProcess.env, ["python3", "-c", script, String(port)] + extra(), stdin: false)
            let ready = await process.waitUntil(timeout: .seconds(10)) { process.stderrText.contains("ready") || !process.isRunning }
            if ready && process.isRunning { return (port, process) }
            lastError = process.stderrTail()
            process.stop()
        }
        throw OCSPTestResponder.ResponderError(description: "python3 HTTP server did not start: \(lastError)")
    }

    deinit { stop() }

    /// Requests answered so far.
    public var requestCount: Int {
        process.stderrText.components(separatedBy: "request\n").count - 1
    }

    public func stop() {
        process.stop()
    }

    /// The requests counted once `expected` arrived (or 5 s passed) and 100 ms more brought no
    /// other: the server logs each on its stderr, which reaches this process a moment after the
    /// answer reached the client, so an immediate read could miss the last one.
    public func settledRequestCount(expecting expected: Int) async -> Int {
        _ = await process.waitUntil(timeout: .seconds(5)) { requestCount >= expected }
        try? await Task.sleep(for: .milliseconds(100))
        return requestCount
    }
}
