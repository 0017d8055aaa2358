import Foundation

/// An HTTP receiver on 127.0.0.1 (python3's http.server) that answers every POST with one
/// status and records each body as a line of its standard output: a `forward` or `http`
/// sink's receiver, independent of Signet's own HTTP stack.
public final class RecordingHTTPReceiver: Sendable {
    public let port: Int
    private let process: ChildProcess

    public var url: String { "http://127.0.0.1:\(port)/apple" }

    private static let script = """
        import http.server, sys
        port, status = int(sys.argv[1]), int(sys.argv[2])
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length', '0')))
                if status // 100 == 2:
                    sys.stdout.buffer.write(body + b'\\n'); sys.stdout.flush()
                self.send_response(status)
                self.send_header('Content-Length', '0')
                self.end_headers()
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(('127.0.0.1', port), Handler)
        sys.stderr.write('ready\\n'); sys.stderr.flush()
        server.serve_forever()
        """

    /// Starts the receiver answering `status` (bodies are recorded only when it is 2xx), on
    /// `port` (nil: a free one).
    public init(status: Int = 200, port: Int? = nil) async throws {
        (self.port, self.process) = try await FixedHTTPResponder.startPython(script: Self.script, port: port) { [String(status)] }
    }

    deinit { stop() }

    /// The bodies accepted so far, in arrival order.
    public var bodies: [String] { process.stdoutText.split(separator: "\n").map(String.init) }

    /// Waits until `count` bodies arrived; whether they did within `timeout`.
    public func waitForBodies(_ count: Int, timeout: Duration) async -> Bool {
        await process.waitUntil(timeout: timeout) { process.stdoutLineCount >= count }
    }

    public func stop() {
        process.stop()
    }
}
