import Foundation
import SignetFixtures
import SignetTestSupport
import Testing

/// Issue 53, item 6: the alerts on one-off events (a dead letter, a refused forward, a revoked
/// certificate) must FIRE when the real `signet` binary has such an event, as a real
/// Prometheus scraping its operators' listener sees it, not only evaluate. A counter whose
/// label set appears at its first event is born at 1, and `increase()` reads that as no
/// increase; the shipped rules also count a series born within the window of a process
/// started within it (signet_process_start_time_seconds).
///
/// Prometheus is started first and scrapes the running `signet` before anything happens, as
/// in production (Prometheus already watches an instance when its first dead letter comes):
/// the series that appear at their first event are then born at 1 or more in Prometheus.
@Suite(
    "alerts on one-off events fire: a real Prometheus with the shipped rules scraping the signet binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(4)),
    .enabled(if: PrometheusTools.unavailableReason == nil, "\(PrometheusTools.unavailableReason ?? "")"))
struct AlertsFireFromTheBinaryTests {
    /// How long an alert may take to fire once the events are in signet's /metrics.
    static let firingTimeout: Duration = .seconds(90)

    @Test("a dead letter and a refused forward: SignetDeadLettersRising (per reason) and SignetForwardDeadLetters fire")
    func deadLettersAndRefusedForwardsFire() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-alerts-fire")
        defer { directory.remove() }
        let fixtures = directory.path("fixtures")
        let made = try await SignetProcess.output(["fixtures", "--out", fixtures, "--count", "3"], timeout: 120)
        try #require(made.exitCode == 0, "signet fixtures: \(made.stderr)")
        let notifications = try Self.lines(fixtures + "/notifications.ndjson")
        let forged = try Self.lines(fixtures + "/forged.ndjson")
        try #require(notifications.count == 3 && !forged.isEmpty)

        // Every forward is refused (HTTP 400): each verified notification is given up at once.
        let refusing = try await RecordingHTTPReceiver(status: 400)
        defer { refusing.stop() }
        let pipeline = directory.path("refused.yaml")
        try String(contentsOfFile: FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml").path, encoding: .utf8)
            .replacingOccurrences(
                of: "sinks:\n", with: "sinks:\n  staging:\n    type: forward\n    urls: [\(refusing.url)]\n    poll_interval: 200ms\n")
            .appending("\nhttp:\n  address: 127.0.0.1:0\n")
            .write(toFile: pipeline, atomically: true, encoding: .utf8)
        var environment = try FixturesEnvironment.read(fixtures)
        environment["SIGNET_DATA_DIR"] = directory.path("data")

        let rules = try Self.rulesForTest(in: directory, firingAt0m: ["SignetDeadLettersRising"])
        try await Self.observe(
            pipeline: pipeline, environment: environment, rules: rules, directory: directory,
            alerts: ["SignetDeadLettersRising", "SignetForwardDeadLetters"],
            // Prometheus has the forward attempt series (exported at 0 from the start) before
            // the first refusal.
            before: #"signet_forward_attempts_total{job="signet",sink="staging",result="refused"} == 0"#,
            input: notifications + ["not json"] + forged
        ) { samples in
            // Every verified notification refused once, every forged or malformed line dead-lettered.
            Self.total(samples, "signet_forward_attempts_total", [#"sink="staging""#, #"result="refused""#]) >= Double(notifications.count)
                && Self.total(samples, "signet_dead_letters_total", []) >= Double(forged.count + 1)
        } checkMetrics: { samples, started in
            let start = try #require(samples["signet_process_start_time_seconds"], "no signet_process_start_time_seconds in /metrics")
            let now = Date().timeIntervalSince1970
            #expect(start >= started - 5 && start <= now, "signet_process_start_time_seconds \(start), test started \(started), now \(now)")
            let refused = Self.total(samples, "signet_forward_attempts_total", [#"sink="staging""#, #"result="refused""#])
            #expect(refused > 0, "signet_forward_attempts_total{result=\"refused\"} is \(refused)")
            #expect(refused == Double(notifications.count), "one refusal per verified notification: \(refused)")
            #expect(Self.total(samples, "signet_dead_letters_total", []) == Double(forged.count + 1))
        } firing: { samples, alerts in
            // SignetDeadLettersRising for every reason a dead letter was counted with, and
            // SignetForwardDeadLetters for the refusing receiver.
            let reasons = Self.labelValues(samples, "signet_dead_letters_total", "reason")
            let firing = Self.firing(alerts, "SignetDeadLettersRising")
            let forward = Self.firing(alerts, "SignetForwardDeadLetters")
            return !reasons.isEmpty && Set(firing.compactMap { $0["reason"] }) == reasons
                && firing.allSatisfy { $0["job"] == "signet" && $0["instance"] != nil }
                && forward.contains { $0["sink"] == "staging" && $0["target"] == refusing.url && $0["job"] == "signet" }
        }
    }

    @Test("a notification under a revoked leaf (OCSP, hard mode): SignetCertificateRevoked fires")
    func revokedCertificateFires() async throws {
        let bed = try await OCSPTestBed.start(leafEntry: {
            .revoked($0.leaf, date: Date(timeIntervalSince1970: 1_767_225_600), reason: "keyCompromise")
        })
        defer { bed.stop() }
        let directory = try TemporaryDirectory(prefix: "signet-alerts-revoked")
        defer { directory.remove() }
        var lines: [String] = []
        try FixtureSet(directory: directory.url).streamNotifications(count: 2, pki: bed.pki) { line, _, _ in
            lines.append(String(decoding: line, as: UTF8.self))
        }
        let root = try directory.write("root.pem", bed.pki.rootPEM)
        let pipeline = try directory.write("revoked.yaml", """
            source: { type: stdin }
            stages:
              - type: decode
              - { type: verify, roots: \(root), environment: Sandbox, bundle_id: com.example.signet, revocation: { mode: hard } }
            sinks:
              out: { type: file, path: \(directory.path("out.ndjson")) }
            dead_letter: { type: file, path: \(directory.path("dead.ndjson")) }
            http: { address: 127.0.0.1:0, api: false }   # no state store: /metrics only
            """)
        // SignetCertificateRevoked ships with `for: 0m`: the shipped file as it is.
        try await Self.observe(
            pipeline: pipeline, environment: [:], rules: AlertsAndDashboardTests.rules, directory: directory,
            alerts: ["SignetCertificateRevoked", "SignetDeadLettersRising"],
            before: #"signet_revocation_checks_total{job="signet",result="revoked"} == 0"#, input: lines
        ) { samples in
            Self.total(samples, "signet_revocation_checks_total", [#"result="revoked""#]) >= 1
                && Self.total(samples, "signet_dead_letters_total", [#"reason="certificate_revoked""#]) >= Double(lines.count)
        } checkMetrics: { samples, _ in
            #expect(samples["signet_process_start_time_seconds"] != nil, "no signet_process_start_time_seconds in /metrics")
        } firing: { _, alerts in
            Self.firing(alerts, "SignetCertificateRevoked").contains { $0["job"] == "signet" && $0["instance"] != nil }
        }
        // The notifications were rejected as revoked, not passed.
        let dead = (try? Self.lines(directory.path("dead.ndjson"))) ?? []
        #expect(dead.count == lines.count && dead.allSatisfy { $0.contains("certificate_revoked") }, "\(dead)")
    }

    // MARK: The run

    /// Starts `signet run --pipeline pipeline` and a Prometheus scraping its operators' listener
    /// every second with `rules` loaded; once Prometheus answers `before` with a series (it
    /// scraped signet before anything happened) and evaluated the rules with none of `alerts`
    /// active (a rule that fires on the series at 0 would prove nothing), writes `input` to
    /// signet's stdin, waits until
    /// signet's /metrics satisfy `ready`, runs `checkMetrics` on them, then polls
    /// /api/v1/alerts until `firing` holds (given the /metrics samples and each firing
    /// alert's labels). Closes stdin at the end and expects a clean exit.
    static func observe(
        pipeline: String, environment: [String: String], rules: String, directory: TemporaryDirectory,
        alerts names: Set<String>, before: String, input: [String],
        ready: ([String: Double]) -> Bool,
        checkMetrics: ([String: Double], _ testStarted: Double) throws -> Void,
        firing: ([String: Double], [[String: Any]]) -> Bool
    ) async throws {
        let started = Date().timeIntervalSince1970
        let signet = try ChildProcess.signet(["run", "--pipeline", pipeline], environment: environment)
        defer { signet.stop() }
        _ = await signet.waitUntil(timeout: .seconds(30)) { listeningPort(in: signet.stderrText) != nil || !signet.isRunning }
        let port = try #require(listeningPort(in: signet.stderrText), "no listener: \(signet.stderrTail())")
        let metrics = "http://127.0.0.1:\(port)/metrics"

        let webPort = try freeLocalPort()
        let config = try directory.write("prometheus.yml", """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            rule_files: ["\(rules)"]
            scrape_configs:
              - job_name: signet
                static_configs:
                  - targets: ["127.0.0.1:\(port)"]
            """)
        let prometheus = try ChildProcess(
            ChildProcess.env,
            ["prometheus", "--config.file=\(config)", "--storage.tsdb.path=\(directory.path("prometheus-data"))",
             "--web.listen-address=127.0.0.1:\(webPort)"],
            stdin: false)
        defer { prometheus.stop() }
        let api = Prometheus(base: "http://127.0.0.1:\(webPort)")

        // Prometheus scrapes signet before the first event.
        var seen = false
        let scraped = ContinuousClock.now + .seconds(40)
        while !seen && ContinuousClock.now < scraped && prometheus.isRunning {
            try await Task.sleep(for: .milliseconds(500))
            seen = (try? await api.query(before).isEmpty == false) ?? false
        }
        try #require(seen, "Prometheus never answered \(before): \(prometheus.stderrTail())\nsignet: \(signet.stderrTail())")
        // And evaluated the rules on it (rule groups start at their own offset), none of the
        // alerts under test active yet.
        try await Task.sleep(for: .seconds(3))
        let quiet = try await api.get("/api/v1/alerts", [:])
        let early = (((quiet["data"] as? [String: Any])?["alerts"] as? [[String: Any]]) ?? []).filter {
            names.contains((($0["labels"] as? [String: String]) ?? [:])["alertname"] ?? "")
        }
        #expect(early.isEmpty, "active before any event: \(early)")

        try signet.write(input.joined(separator: "\n") + "\n")
        var samples: [String: Double] = [:]
        let settled = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < settled && signet.isRunning {
            samples = parsePrometheus(try await curl(metrics))
            if ready(samples) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        try #require(ready(samples), "signet's /metrics never showed the events: \(signet.stderrTail())")
        try checkMetrics(samples, started)

        let eventsSeen = ContinuousClock.now
        var answer: [String: Any] = [:]
        var alerts: [[String: Any]] = []
        var fired = false
        while !fired && ContinuousClock.now < eventsSeen + firingTimeout && prometheus.isRunning {
            answer = try await api.get("/api/v1/alerts", [:])
            alerts = ((answer["data"] as? [String: Any])?["alerts"] as? [[String: Any]]) ?? []
            fired = firing(samples, alerts)
            if !fired { try await Task.sleep(for: .seconds(1)) }
        }
        let json = (try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "\(answer)"
        #expect(fired, "the alerts did not fire within \(firingTimeout): /api/v1/alerts: \(json)\nsignet: \(signet.stderrTail())\nprometheus: \(prometheus.stderrTail(5))")
        if fired {
            let labels = names.sorted().flatMap { Self.firing(alerts, $0) }.map { $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }
            print("firing \(ContinuousClock.now - eventsSeen) after the events were in /metrics: \(labels.joined(separator: "; "))")
        }

        signet.closeInput()
        #expect(await signet.exit(within: .seconds(30)) == 0, "signet: \(signet.stderrTail())")
    }

    // MARK: Rules

    /// The shipped rules file copied into `directory` with `for: 0m` for the alerts named in
    /// `names`. Why: SignetDeadLettersRising ships with `for: 5m` (a dead letter that keeps
    /// coming, not a blip), longer than a test may wait; `for:` only delays a firing alert, and
    /// what is under test is whether the expression ever makes it active. Every `expr:` stays
    /// exactly as shipped.
    static func rulesForTest(in directory: TemporaryDirectory, firingAt0m names: Set<String>) throws -> String {
        let shipped = try String(contentsOfFile: AlertsAndDashboardTests.rules, encoding: .utf8)
        var alert: String?
        var rewritten = 0
        let lines = shipped.components(separatedBy: "\n").map { line -> String in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("- alert: ") { alert = String(trimmed.dropFirst("- alert: ".count)) }
            guard let name = alert, names.contains(name), trimmed.hasPrefix("for: ") else { return line }
            alert = nil
            rewritten += 1
            return line.replacingOccurrences(of: trimmed, with: "for: 0m")
        }
        #expect(rewritten == names.count, "a `for:` rewritten for each of \(names.sorted())")
        let copy = lines.joined(separator: "\n")
        for (name, expression) in try AlertsAndDashboardTests.alerts() {
            #expect(copy.contains("expr: \(expression)\n"), "\(name)'s expression as shipped")
        }
        return try directory.write("signet-alerts.yml", copy)
    }

    // MARK: Reading answers

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// The sum of the samples of `name` whose labels contain every one of `labels` (`key="value"`).
    static func total(_ samples: [String: Double], _ name: String, _ labels: [String]) -> Double {
        samples.filter { key, _ in
            (key == name || key.hasPrefix(name + "{")) && labels.allSatisfy { key.contains($0) }
        }.values.reduce(0, +)
    }

    /// The values of label `label` among the samples of `name` above 0.
    static func labelValues(_ samples: [String: Double], _ name: String, _ label: String) -> Set<String> {
        Set(samples.compactMap { key, value -> String? in
            guard key.hasPrefix(name + "{"), value > 0, let start = key.range(of: "\(label)=\"") else { return nil }
            return String(key[start.upperBound...].prefix { $0 != "\"" })
        })
    }

    /// The labels of each alert named `name` in state firing.
    static func firing(_ alerts: [[String: Any]], _ name: String) -> [[String: String]] {
        alerts.compactMap { alert in
            guard alert["state"] as? String == "firing", let labels = alert["labels"] as? [String: String], labels["alertname"] == name
            else { return nil }
            return labels
        }
    }
}
