import Foundation
import SignetTestSupport
import Testing

/// A Python script that drives the `signet` binary (raw sockets, http.client) in a folder
/// of fresh fixtures and prints its findings as one JSON object on its last line; the
/// binary's stderr goes to `signet.err` in the folder.
struct BinaryDriver {
    let directory: TemporaryDirectory
    /// The driver's JSON report.
    let report: [String: Any]
    /// What the binary wrote on stderr.
    let stderr: String

    /// Makes `count` fixtures in a new folder and runs `script` with the binary's path, the
    /// folder and `arguments`. The caller removes ``directory``.
    static func run(_ script: String, prefix: String, fixtures count: Int, arguments: [String] = []) async throws -> BinaryDriver {
        let directory = try TemporaryDirectory(prefix: prefix)
        let fixtures = try await SignetProcess.output(["fixtures", "--out", directory.path(""), "--count", String(count)])
        try #require(fixtures.exitCode == 0, "\(fixtures.stderr)")
        let result = try await Blocking.python(prelude + script, [SignetProcess.executable.path, directory.path("")] + arguments)
        let stderr = (try? String(contentsOfFile: directory.path("signet.err"), encoding: .utf8)) ?? ""
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data((result.output.split(separator: "\n").last ?? "").utf8)) as? [String: Any],
            "\(result.output)\n\(stderr)")
        return BinaryDriver(directory: directory, report: report, stderr: stderr)
    }

    /// Python both drivers start with: `binary` and `folder` from the arguments (the rest in
    /// `sys.argv[3:]`), `free_port()`, `start(pipeline, env, port)`, which runs
    /// `signet run --pipeline` (stderr to `signet.err`) and waits until `port` accepts, and
    /// `webhook_pipeline(port, admin, ...)`, a webhook pipeline file in the folder.
    static let prelude = #"""
        import http.client, json, os, socket, subprocess, sys, threading, time
        binary, folder = sys.argv[1], sys.argv[2]
        def free_port():
            probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close(); return port
        def start(pipeline, env, port):
            env = dict({k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}, **env)
            process = subprocess.Popen([binary, "run", "--pipeline", pipeline], env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "signet.err"), "wb"))
            for _ in range(1200):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
                except OSError: time.sleep(0.05)
            return process
        def webhook_pipeline(port, admin, source_keys="", admin_keys=""):
            # webhook.yaml in the folder: the webhook on `port` (plus `source_keys`, ", key: value"
            # pairs) through the full chain to events.ndjson, and the admin listener on `admin`.
            path = os.path.join(folder, "webhook.yaml")
            open(path, "w").write(f"""
        stores: {{ default: {{ type: sqlite, path: {folder}/data/signet.sqlite }} }}
        source: {{ type: http, address: 127.0.0.1:{port}{source_keys} }}
        stages:
          - type: decode
          - {{ type: verify, roots: {folder}/root.pem, environment: Sandbox, bundle_id: com.example.signet }}
          - type: dedupe
          - type: transition
          - {{ type: fanout, default_sinks: [events] }}
        sinks: {{ events: {{ type: file, path: {folder}/events.ndjson }} }}
        dead_letter: {{ type: file, path: {folder}/dead.ndjson }}
        http: {{ address: 127.0.0.1:{admin}{admin_keys} }}
        settings: {{ progress_interval: 0s }}
        """)
            return path

        """#

    /// The lines of a file in the folder (none when it is missing).
    func lines(_ name: String) -> [Substring] {
        ((try? String(contentsOfFile: directory.path(name), encoding: .utf8)) ?? "").split(separator: "\n")
    }
}
