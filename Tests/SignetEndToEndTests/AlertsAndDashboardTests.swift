import Foundation
import SignetTestSupport
import Testing

/// The alert rules and the Grafana dashboard that ship in packaging/ (and the Debian package):
/// promtool checks and unit-tests the rules, and a real Prometheus scraping a running `signet`
/// answers every dashboard query with series and evaluates every alert without error.
@Suite(
    "alert rules and dashboard: promtool, and a real Prometheus scraping a running signet",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(3)),
    .enabled(if: PrometheusTools.unavailableReason == nil, "\(PrometheusTools.unavailableReason ?? "")"))
struct AlertsAndDashboardTests {
    static let rules = FixturePaths.packageRoot.appendingPathComponent("packaging/prometheus/signet-alerts.yml").path
    static let ruleTests = FixturePaths.packageRoot.appendingPathComponent("packaging/prometheus/signet-alerts.test.yml").path
    static let dashboard = FixturePaths.packageRoot.appendingPathComponent("packaging/grafana/signet-dashboard.json").path

    @Test("promtool check rules accepts signet-alerts.yml and promtool test rules passes signet-alerts.test.yml")
    func promtool() async throws {
        let check = try await offPool { try SignetProcess.run(executable: ChildProcess.env, ["promtool", "check", "rules", Self.rules], timeout: 30) }
        #expect(check.exitCode == 0, "\(check.stdoutText)\(check.stderr)")
        #expect(check.stdoutText.contains("SUCCESS"), "\(check.stdoutText)")
        let test = try await offPool { try SignetProcess.run(executable: ChildProcess.env, ["promtool", "test", "rules", Self.ruleTests], timeout: 30) }
        #expect(test.exitCode == 0, "\(test.stdoutText)\(test.stderr)")
        // Every alert of the rules file has a unit test.
        let tests = try String(contentsOfFile: Self.ruleTests, encoding: .utf8)
        for name in try Self.alerts().map(\.name) {
            #expect(tests.contains("alertname: \(name)\n"), "no promtool test for \(name)")
        }
    }

    @Test("Prometheus scraping a running signet answers every dashboard panel's query with series and evaluates every alert rule without error")
    func dashboardAgainstRealScrapes() async throws {
        try await BackfillTestBed.with(count: 6) { try await dashboardAgainstRealScrapes($0) }
    }

    func dashboardAgainstRealScrapes(_ bed: BackfillTestBed) async throws {
        // Notifications of every kind the panels show: accepted ones, a refund question for the
        // consumption stage, a malformed line and forged ones (dead letters, a configuration
        // rejection), and Apple's TEST notification for the delivery round trip.
        let fixtures = bed.directory.path("fixtures")
        func one(_ type: String) async throws -> String {
            let made = try await SignetProcess.output(["fixtures", "--out", fixtures, "--type", type, "--count", "1", "--now", "--stdout"], timeout: 120)
            return try #require(made.lines.first { $0.hasPrefix("{") }, "signet fixtures --type \(type): \(made.stderr)")
        }
        let testNotification = try await one("TEST")
        let consumptionRequest = try await one("CONSUMPTION_REQUEST")
        let forged = try String(contentsOfFile: fixtures + "/forged.ndjson", encoding: .utf8).split(separator: "\n").map(String.init)
        let payload = try #require(BackfillTestBed.field("signedPayload", of: testNotification))
        bed.fake.setTestNotificationPayload(payload)

        // A forward receiver, so the forwarding panels have real series too.
        let receiver = try await RecordingHTTPReceiver()
        defer { receiver.stop() }
        let pipeline = bed.directory.path("observed.yaml")
        let stdin = try String(contentsOfFile: FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml").path, encoding: .utf8)
        try stdin
            .replacingOccurrences(of: "  - type: dedupe", with: "  - type: appstore_delivery_health\n    interval: 1h\n    timeout: 30s\n    poll: 1s\n  - type: dedupe")
            .replacingOccurrences(of: "  - type: fanout", with: "  - type: appstore_consumption\n    interval: 1s\n  - type: fanout")
            .replacingOccurrences(
                of: "sinks:\n", with: "sinks:\n  staging:\n    type: forward\n    urls: [\(receiver.url)]\n    poll_interval: 200ms\n")
            .appending("\nhttp:\n  address: 127.0.0.1:0\n")
            .write(toFile: pipeline, atomically: true, encoding: .utf8)
        var environment = bed.environment
        environment["SIGNET_DATA_DIR"] = bed.dataDir("observed")
        let signet = try ChildProcess.signet(["run", "--pipeline", pipeline], environment: environment)
        defer { signet.stop() }
        _ = await signet.waitUntil(timeout: .seconds(30)) { listeningPort(in: signet.stderrText) != nil || !signet.isRunning }
        let port = try #require(listeningPort(in: signet.stderrText), "no listener: \(signet.stderrTail())")
        try signet.write((bed.lines + [consumptionRequest, "not json"] + forged).joined(separator: "\n") + "\n")

        // Apple's part of the round trip: once asked, the TEST notification arrives.
        let asked = await signet.waitUntil(timeout: .seconds(30)) { !bed.fake.requests(.requestTestNotification).isEmpty || !signet.isRunning }
        #expect(asked, "the delivery-health stage never asked for a TEST notification: \(signet.stderrTail())")
        try signet.write(testNotification + "\n")
        let metrics = "http://127.0.0.1:\(port)/metrics"
        var roundTrip = false
        for _ in 0..<150 where !roundTrip {
            roundTrip = (parsePrometheus(try await curl(metrics))["signet_delivery_round_trips_total{result=\"success\"}"] ?? 0) >= 1
            if !roundTrip { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(roundTrip, "no successful round trip: \(signet.stderrTail())")
        #expect(await receiver.waitForBodies(1, timeout: .seconds(30)), "nothing forwarded: \(signet.stderrTail())")

        // Prometheus scraping it every second, with the alert rules loaded.
        let directory = try TemporaryDirectory(prefix: "signet-prometheus")
        defer { directory.remove() }
        let (prometheus, api) = try Prometheus.start(scraping: "127.0.0.1:\(port)", rules: Self.rules, in: directory)
        defer { prometheus.stop() }
        var scrapes = 0.0
        let deadline = ContinuousClock.now + .seconds(40)
        while scrapes < 5 && ContinuousClock.now < deadline && prometheus.isRunning {
            try await Task.sleep(for: .milliseconds(500))
            scrapes = (try? await api.query(#"sum(count_over_time(up{job="signet"}[1m]))"#).first?.value) ?? 0
        }
        #expect(scrapes >= 5, "Prometheus did not scrape signet 5 times: \(prometheus.stderrTail())")
        #expect(try await api.query(#"up{job="signet"}"#).first?.value == 1, "signet's target is not up")

        // Every panel's query answers series. A query with `or on() vector(0)` falls back to 0
        // only where no series means zero (no Kafka source, no 429 yet, no OCSP check made):
        // without the fallback it must answer series too, except for those three in this run.
        let withoutData: Set<String> = ["Kafka partition lag", "App Store API pauses", "Revocation checks"]
        let targets = try Self.panelQueries()
        #expect(targets.count >= 20, "\(targets.count) queries")
        for (title, expression) in targets {
            let series = try await api.query(expression)
            #expect(!series.isEmpty, "panel \(title): no series for \(expression)")
            if let fallback = expression.range(of: " or on() vector(0)") {
                let bare = try await api.query(String(expression[..<fallback.lowerBound]))
                #expect(bare.isEmpty == withoutData.contains(title), "panel \(title): \(bare.count) series without the fallback")
            }
        }

        // Every alert expression parses and evaluates against the real data, and the rules
        // Prometheus loaded all evaluated without error.
        let alerts = try Self.alerts()
        #expect(alerts.count >= 14)
        for alert in alerts {
            _ = try await api.query(alert.expression)
        }
        var healthy = false
        for _ in 0..<40 where !healthy {
            let rules = try await api.get("/api/v1/rules", [:])
            let groups = ((rules["data"] as? [String: Any])?["groups"] as? [[String: Any]]) ?? []
            let loaded = groups.flatMap { ($0["rules"] as? [[String: Any]]) ?? [] }
            healthy = loaded.count == alerts.count && loaded.allSatisfy { $0["health"] as? String == "ok" }
            if !healthy { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(healthy, "Prometheus did not evaluate every loaded rule with health ok: \(prometheus.stderrTail())")

        signet.closeInput()
        #expect(await signet.exit(within: .seconds(30)) == 0, "signet: \(signet.stderrTail())")
    }

    /// Each panel's queries with Grafana's variables replaced as a 1 s scrape interval makes them.
    static func panelQueries() throws -> [(title: String, expression: String)] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dashboard))) as? [String: Any]
        let panels = try #require(object?["panels"] as? [[String: Any]])
        return panels.flatMap { panel -> [(String, String)] in
            let title = panel["title"] as? String ?? "?"
            return ((panel["targets"] as? [[String: Any]]) ?? []).compactMap { $0["expr"] as? String }.map { expression in
                let concrete = expression
                    .replacingOccurrences(of: "$__rate_interval", with: "1m")
                    .replacingOccurrences(of: "$__interval", with: "1m")
                    .replacingOccurrences(of: "$__range", with: "1h")
                    .replacingOccurrences(of: "$instance", with: ".*")
                return (title, concrete)
            }
        }
    }

    /// The alerts of the rules file: name and expression (every `expr:` fits on its line).
    static func alerts() throws -> [(name: String, expression: String)] {
        let lines = try String(contentsOfFile: rules, encoding: .utf8).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var found: [(String, String)] = []
        for (index, line) in lines.enumerated() where line.hasPrefix("- alert: ") {
            let expression = try #require(lines[(index + 1)...].first { $0.hasPrefix("expr: ") })
            found.append((String(line.dropFirst("- alert: ".count)), String(expression.dropFirst("expr: ".count))))
        }
        return found
    }
}

/// Debian's `prometheus` package: promtool and prometheus.
enum PrometheusTools {
    /// Why these tests cannot run here: Debian's `prometheus` package (promtool, prometheus) missing.
    static var unavailableReason: String? {
        let missing = ["promtool", "prometheus"].filter { executable(named: $0) == nil }
        return missing.isEmpty ? nil : "\(missing.joined(separator: " and ")) not on PATH (install Debian's 'prometheus' package; scripts/install-deps.sh does)"
    }

    static func executable(named name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// Prometheus' HTTP API through curl (an independent client); AlertsFireFromTheBinaryTests uses it too.
struct Prometheus {
    let base: String

    /// A Prometheus server on a free loopback port, scraping `target` (job `signet`) and
    /// evaluating `rules` every second, its data in `directory`; the caller stops the process.
    static func start(scraping target: String, rules: String, in directory: TemporaryDirectory) throws -> (ChildProcess, Prometheus) {
        let webPort = try freeLocalPort()
        let config = try directory.write("prometheus.yml", """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            rule_files: ["\(rules)"]
            scrape_configs:
              - job_name: signet
                static_configs:
                  - targets: ["\(target)"]
            """)
        let process = try ChildProcess(
            ChildProcess.env,
            ["prometheus", "--config.file=\(config)", "--storage.tsdb.path=\(directory.path("prometheus-data"))",
             "--web.listen-address=127.0.0.1:\(webPort)"],
            stdin: false)
        return (process, Prometheus(base: "http://127.0.0.1:\(webPort)"))
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// GET `path` with URL-encoded parameters; the decoded JSON answer, which must say success.
    func get(_ path: String, _ parameters: [String: String]) async throws -> [String: Any] {
        let arguments = ["curl", "-sS", "--max-time", "10", "-G", base + path] + parameters.flatMap { ["--data-urlencode", "\($0.key)=\($0.value)"] }
        let result = try await offPool { try SignetProcess.run(executable: ChildProcess.env, arguments, timeout: 20) }
        guard result.exitCode == 0 else { throw Failure(description: "curl \(path) failed: \(result.stderr)") }
        guard let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], object["status"] as? String == "success" else {
            throw Failure(description: "\(path) \(parameters): \(result.stdoutText)")
        }
        return object
    }

    /// An instant query's series: labels and value (NaN included, as Prometheus answers it).
    func query(_ expression: String) async throws -> [(labels: [String: String], value: Double)] {
        let answer = try await get("/api/v1/query", ["query": expression])
        let data = try #require(answer["data"] as? [String: Any])
        guard data["resultType"] as? String == "vector" else { throw Failure(description: "\(expression): not a vector: \(data)") }
        return ((data["result"] as? [[String: Any]]) ?? []).map { sample in
            let value = (sample["value"] as? [Any])?.last as? String
            return ((sample["metric"] as? [String: String]) ?? [:], value.flatMap(Double.init) ?? .nan)
        }
    }
}
