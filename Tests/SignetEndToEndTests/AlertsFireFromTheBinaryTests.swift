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
///
/// Issue 53 also asks the same of the alerts on a lasting state (the process down, every
/// notification another app's, OCSP or a sink failing, a forward backlog, an App Store API
/// pause, a refund question waiting, a round trip failing). Where a rule ships with a `for:`
/// longer than a test may wait, the test's copy says `for: 0m` (``rulesForTest``): `for:`
/// only delays an alert that is active, and what is under test is that the real binary's
/// metrics make the shipped expression true. An hour or five minutes of waiting (a forward
/// backlog, a pending refund question) is made by moving a timestamp back in signet's SQLite
/// store while it runs; two hours without a delivery round trip, by a restart that finds an old
/// success in the stage's state file; slow commits and a consumer lag, by another process holding
/// the store's write lock under a Kafka backlog (AlertsFireFromKafkaTests.swift). Every shipped
/// alert fires here.
@Suite(
    "alerts fire: a real Prometheus with the shipped rules scraping the signet binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(6)),
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

    // MARK: Alerts on a state that lasts

    @Test("signet scraped, then stopped with SIGTERM: SignetDown fires on up == 0")
    func downFires() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-alerts-down")
        defer { directory.remove() }
        let fixtures = try await Self.fixtures(in: directory, count: 1)
        var environment = try FixturesEnvironment.read(fixtures)
        environment["SIGNET_DATA_DIR"] = directory.path("data")
        let pipeline = try Self.stdinPipeline(in: directory, "down.yaml") { $0 }
        // SignetDown ships with `for: 2m` (a restart is not an outage), longer than a test may
        // wait; `for:` only delays a firing alert, what is under test is that `up == 0` makes
        // it active once the process is gone.
        let rules = try Self.rulesForTest(in: directory, firingAt0m: ["SignetDown"])
        try await Self.watching(pipeline: pipeline, environment: environment, rules: rules, directory: directory, alerts: ["SignetDown"]) { watched in
            watched.signet.send(SIGTERM)
            let status = await watched.signet.exit(within: .seconds(30))
            #expect(status == 0, "signet after SIGTERM: \(watched.signet.stderrTail())")
            try await watched.expectFiring(["SignetDown"]) { alerts in
                Self.firing(alerts, "SignetDown").contains { $0["job"] == "signet" && $0["instance"] == watched.target }
            }
        }
    }

    @Test("every notification another app's (SIGNET_BUNDLE_ID mismatch): SignetMisconfigured fires on signet_misconfigured == 1")
    func misconfiguredFires() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-alerts-misconfigured")
        defer { directory.remove() }
        let fixtures = try await Self.fixtures(in: directory, count: 6)
        let notifications = try Self.lines(fixtures + "/notifications.ndjson")
        try #require(notifications.count >= 5, "signet_misconfigured needs at least 5 rejections: \(notifications.count)")
        var environment = try FixturesEnvironment.read(fixtures)
        let fixturesApp = try #require(environment["SIGNET_BUNDLE_ID"], "no SIGNET_BUNDLE_ID in fixtures.env")
        environment["SIGNET_BUNDLE_ID"] = fixturesApp + ".another"
        environment["SIGNET_DATA_DIR"] = directory.path("data")
        let pipeline = try Self.stdinPipeline(in: directory, "misconfigured.yaml") { $0 }
        // SignetMisconfigured ships with `for: 5m`: see rulesForTest.
        let rules = try Self.rulesForTest(in: directory, firingAt0m: ["SignetMisconfigured"])
        try await Self.watching(
            pipeline: pipeline, environment: environment, rules: rules, directory: directory, alerts: ["SignetMisconfigured"],
            before: #"signet_misconfigured{job="signet"} == 0"#
        ) { watched in
            try watched.signet.write(notifications.joined(separator: "\n") + "\n")
            let samples = try await watched.waitForMetrics("signet_misconfigured == 1") { samples in
                samples["signet_misconfigured"] == 1
            }
            #expect(Self.total(samples, "signet_configuration_rejections_total", [#"reason="bundle_id_mismatch""#]) == Double(notifications.count))
            try await watched.expectFiring(["SignetMisconfigured"]) { alerts in
                Self.firing(alerts, "SignetMisconfigured").contains { $0["job"] == "signet" && $0["instance"] == watched.target }
            }
            watched.signet.closeInput()
            #expect(await watched.signet.exit(within: .seconds(30)) == 0, "signet: \(watched.signet.stderrTail())")
        }
        let dead = (try? Self.lines(directory.path("data") + "/dead-letter.ndjson")) ?? []
        #expect(dead.count == notifications.count && dead.allSatisfy { $0.contains("bundle_id_mismatch") }, "\(dead)")
    }

    @Test("the leaf's OCSP responder down (hard mode, a long retry_timeout): SignetRevocationChecksFailing fires for unreachable")
    func revocationChecksFailingFires() async throws {
        let bed = try await OCSPTestBed.start()
        defer { bed.stop() }
        bed.leafResponder.stop()
        let directory = try TemporaryDirectory(prefix: "signet-alerts-ocsp-down")
        defer { directory.remove() }
        var lines: [String] = []
        try FixtureSet(directory: directory.url).streamNotifications(count: 2, pki: bed.pki) { line, _, _ in
            lines.append(String(decoding: line, as: UTF8.self))
        }
        let root = try directory.write("root.pem", bed.pki.rootPEM)
        // Hard mode holds the batch and asks again (100 ms doubling to 5 s) until retry_timeout:
        // the unreachable checks keep rising while Prometheus watches.
        let pipeline = try directory.write("ocsp-down.yaml", """
            source: { type: stdin }
            stages:
              - type: decode
              - { type: verify, roots: \(root), environment: Sandbox, bundle_id: com.example.signet, revocation: { mode: hard, retry_timeout: 10m } }
            sinks:
              out: { type: file, path: \(directory.path("out.ndjson")) }
            dead_letter: { type: file, path: \(directory.path("dead.ndjson")) }
            http: { address: 127.0.0.1:0, api: false }   # no state store: /metrics only
            settings: { shutdown_timeout: 2s }
            """)
        // SignetRevocationChecksFailing ships with `for: 10m`: see rulesForTest.
        let rules = try Self.rulesForTest(in: directory, firingAt0m: ["SignetRevocationChecksFailing"])
        try await Self.watching(
            pipeline: pipeline, environment: [:], rules: rules, directory: directory, alerts: ["SignetRevocationChecksFailing"]
        ) { watched in
            try watched.signet.write(lines.joined(separator: "\n") + "\n")
            // Asked again and again: at least three unreachable answers.
            let samples = try await watched.waitForMetrics(#"signet_revocation_checks_total{result="unreachable"} >= 3"#) { samples in
                Self.total(samples, "signet_revocation_checks_total", [#"result="unreachable""#]) >= 3
            }
            // The intermediate's responder answers (good); only the leaf's is down.
            #expect(Self.total(samples, "signet_revocation_checks_total", [#"result="revoked""#]) == 0)
            try await watched.expectFiring(["SignetRevocationChecksFailing"]) { alerts in
                Self.firing(alerts, "SignetRevocationChecksFailing").contains {
                    $0["result"] == "unreachable" && $0["job"] == "signet" && $0["instance"] == watched.target
                }
            }
        }
        // Held, neither passed nor dead-lettered.
        #expect(((try? Self.lines(directory.path("dead.ndjson"))) ?? []).isEmpty)
        #expect(((try? Self.lines(directory.path("out.ndjson"))) ?? []).isEmpty)
    }

    @Test("an http sink to a port nothing listens on (a long sink_retry_timeout): SignetSinkFailing fires for that sink")
    func sinkFailingFires() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-alerts-sink")
        defer { directory.remove() }
        let fixtures = try await Self.fixtures(in: directory, count: 2)
        let notifications = try Self.lines(fixtures + "/notifications.ndjson")
        var environment = try FixturesEnvironment.read(fixtures)
        environment["SIGNET_DATA_DIR"] = directory.path("data")
        let nobody = try freeLocalPort()
        // The events go only to an http sink nobody answers: each write fails at once
        // (max_retries: 0) and the runner retries the batch (100 ms doubling to 5 s) for 10 minutes.
        let pipeline = try Self.stdinPipeline(in: directory, "sink.yaml") {
            $0.replacingOccurrences(of: "default_sinks: [stdout]", with: "default_sinks: [backend]")
                .replacingOccurrences(
                    of: "sinks:\n  stdout:\n    type: stdout\n",
                    with: "sinks:\n  backend:\n    type: http\n    url: http://127.0.0.1:\(nobody)/events\n    max_retries: 0\n    timeout: 2s\n")
                + "\nsettings:\n  sink_retry_timeout: 10m\n  shutdown_timeout: 2s\n"
        }
        // SignetSinkFailing ships with `for: 5m`: see rulesForTest.
        let rules = try Self.rulesForTest(in: directory, firingAt0m: ["SignetSinkFailing"])
        try await Self.watching(
            pipeline: pipeline, environment: environment, rules: rules, directory: directory, alerts: ["SignetSinkFailing"]
        ) { watched in
            try watched.signet.write(notifications.joined(separator: "\n") + "\n")
            _ = try await watched.waitForMetrics(#"signet_sink_failures_total{sink="backend"} >= 3"#) { samples in
                Self.total(samples, "signet_sink_failures_total", [#"sink="backend""#]) >= 3
            }
            try await watched.expectFiring(["SignetSinkFailing"]) { alerts in
                Self.firing(alerts, "SignetSinkFailing").contains { $0["sink"] == "backend" && $0["job"] == "signet" && $0["instance"] == watched.target }
            }
        }
    }

    @Test("a forward receiver answering 503 and a queued notification enqueued two hours ago: SignetForwardBacklog fires")
    func forwardBacklogFires() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-alerts-backlog")
        defer { directory.remove() }
        let fixtures = try await Self.fixtures(in: directory, count: 1)
        let notifications = try Self.lines(fixtures + "/notifications.ndjson")
        let unavailable = try await RecordingHTTPReceiver(status: 503)
        defer { unavailable.stop() }
        var environment = try FixturesEnvironment.read(fixtures)
        environment["SIGNET_DATA_DIR"] = directory.path("data")
        let pipeline = try Self.stdinPipeline(in: directory, "backlog.yaml") {
            $0.replacingOccurrences(
                of: "sinks:\n", with: "sinks:\n  staging:\n    type: forward\n    urls: [\(unavailable.url)]\n    poll_interval: 200ms\n")
        }
        // SignetForwardBacklog ships with `for: 5m`: see rulesForTest.
        let rules = try Self.rulesForTest(in: directory, firingAt0m: ["SignetForwardBacklog"])
        try await Self.watching(
            pipeline: pipeline, environment: environment, rules: rules, directory: directory, alerts: ["SignetForwardBacklog"],
            before: #"signet_forward_oldest_pending_seconds{job="signet",sink="staging"} == 0"#
        ) { watched in
            try watched.signet.write(notifications.joined(separator: "\n") + "\n")
            // Queued, offered, answered 503 (a retry: it stays queued).
            _ = try await watched.waitForMetrics(#"signet_forward_pending >= 1 and signet_forward_attempts_total{result="retry"} >= 1"#) { samples in
                Self.total(samples, "signet_forward_pending", [#"sink="staging""#]) >= 1
                    && Self.total(samples, "signet_forward_attempts_total", [#"sink="staging""#, #"result="retry""#]) >= 1
            }
            // An hour of waiting, made in the test: the queued entry's enqueued_at (Unix
            // milliseconds, SQLiteSchema's forward_queue) moved two hours back while signet
            // runs (WAL; sqlite3 waits for signet's lock).
            let store = directory.path("data") + "/signet.sqlite"
            let update = try await offPool {
                try SignetProcess.run(
                    executable: ChildProcess.env,
                    ["sqlite3", "-cmd", ".timeout 10000", store, "UPDATE forward_queue SET enqueued_at = enqueued_at - 7200000; SELECT changes();"],
                    timeout: 30)
            }
            #expect(update.exitCode == 0 && update.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "sqlite3: \(update.stdoutText)\(update.stderr)")
            let samples = try await watched.waitForMetrics("signet_forward_oldest_pending_seconds > 3600") { samples in
                Self.total(samples, "signet_forward_oldest_pending_seconds", [#"sink="staging""#]) > 3600
            }
            #expect(Self.total(samples, "signet_forward_oldest_pending_seconds", [#"sink="staging""#]) < 3 * 3600)
            try await watched.expectFiring(["SignetForwardBacklog"]) { alerts in
                Self.firing(alerts, "SignetForwardBacklog").contains {
                    $0["sink"] == "staging" && $0["target"] == unavailable.url && $0["job"] == "signet" && $0["instance"] == watched.target
                }
            }
            watched.signet.closeInput()
            #expect(await watched.signet.exit(within: .seconds(30)) == 0, "signet: \(watched.signet.stderrTail())")
        }
    }

    @Test("a TEST notification that never comes back, a refund question late and one pending: SignetDeliveryRoundTripFailing, SignetConsumptionAnswersLateOrFailed and SignetConsumptionAnswerPending fire")
    func appStoreRoundTripAndConsumptionFire() async throws {
        try await BackfillTestBed.with(count: 1) { bed in
            // One refund question signed in early 2025 (past Apple's 12-hour deadline: late, nothing
            // sent) and one signed now, answered (consent for every customer).
            let fixtures = bed.directory.path("fixtures")
            func consumptionRequest(_ now: Bool) async throws -> String {
                let made = try await SignetProcess.output(
                    ["fixtures", "--out", fixtures, "--type", "CONSUMPTION_REQUEST", "--count", "1", "--stdout"] + (now ? ["--now"] : []), timeout: 120)
                return try #require(made.lines.first { $0.hasPrefix("{") }, "signet fixtures --type CONSUMPTION_REQUEST: \(made.stderr)")
            }
            let late = try await consumptionRequest(false)
            let current = try await consumptionRequest(true)
            // Apple answers the current one 503 (after the client's own retries it stays pending,
            // tried again after retry_delay: an hour, so signet does not rewrite it meanwhile).
            bed.fake.script(Array(repeating: .error(status: 503, errorCode: nil), count: 50), on: .consumption)
            // The round trip starts with the run and fails once `timeout` passes without Apple's
            // TEST notification on stdin: 30 s, so Prometheus watches (and the alerts are checked
            // quiet) before it fails, with room for a slow Prometheus start.
            let pipeline = try Self.stdinPipeline(in: bed.directory, "appstore.yaml") {
                $0.replacingOccurrences(of: "  - type: dedupe", with: "  - type: appstore_delivery_health\n    interval: 1h\n    timeout: 30s\n    poll: 1s\n  - type: dedupe")
                    .replacingOccurrences(
                        of: "  - type: fanout",
                        with: "  - type: appstore_consumption\n    interval: 1s\n    retry_delay: 1h\n    consent: all_customers_agreed_in_app_terms\n  - type: fanout")
            }
            var environment = bed.environment
            environment["SIGNET_DATA_DIR"] = bed.dataDir("appstore")
            // SignetDeliveryRoundTripFailing and SignetConsumptionAnswersLateOrFailed ship with
            // `for: 0m`; SignetConsumptionAnswerPending with `for: 1m`: see rulesForTest.
            let names: Set<String> = ["SignetDeliveryRoundTripFailing", "SignetConsumptionAnswersLateOrFailed", "SignetConsumptionAnswerPending"]
            let rules = try Self.rulesForTest(in: bed.directory, firingAt0m: ["SignetConsumptionAnswerPending"])
            try await Self.watching(
                pipeline: pipeline, environment: environment, rules: rules, directory: bed.directory, alerts: names,
                before: #"signet_delivery_round_trips_total{job="signet",result="failure"} == 0"#
            ) { watched in
                #expect(!bed.fake.requests(.requestTestNotification).isEmpty, "no TEST notification asked for: \(watched.signet.stderrTail())")
                try watched.signet.write([late, current].joined(separator: "\n") + "\n")
                let samples = try await watched.waitForMetrics("a consumption request late and one pending") { samples in
                    Self.total(samples, "signet_consumption_requests_total", [#"outcome="late""#]) >= 1
                        && Self.total(samples, "signet_consumption_pending", []) >= 1
                }
                #expect(Self.total(samples, "signet_consumption_requests_total", [#"outcome="answered""#]) == 0)
                try await watched.expectFiring(["SignetConsumptionAnswersLateOrFailed"]) { alerts in
                    Self.firing(alerts, "SignetConsumptionAnswersLateOrFailed").contains {
                        $0["outcome"] == "late" && $0["job"] == "signet" && $0["instance"] == watched.target
                    }
                }
                try await Self.expectPendingRefundQuestionAlert(store: bed.dataDir("appstore") + "/signet.sqlite", watched: watched)
                _ = try await watched.waitForMetrics(#"signet_delivery_round_trips_total{result="failure"} >= 1"#) { samples in
                    Self.total(samples, "signet_delivery_round_trips_total", [#"result="failure""#]) >= 1
                }
                try await watched.expectFiring(["SignetDeliveryRoundTripFailing"]) { alerts in
                    Self.firing(alerts, "SignetDeliveryRoundTripFailing").contains { $0["job"] == "signet" && $0["instance"] == watched.target }
                }
                watched.signet.closeInput()
                #expect(await watched.signet.exit(within: .seconds(30)) == 0, "signet: \(watched.signet.stderrTail())")
            }
            // The late question was never sent; the current one was, and answered 503.
            let sent = bed.fake.requests(.consumption) + bed.fake.requests(.consumptionV1)
            #expect(!sent.isEmpty && sent.allSatisfy { $0.status == 503 }, "\(sent.map { "\($0.route) \($0.status)" })")
        }
    }

    @Test("Apple answers a refund answer 429 with a 10-minute Retry-After: SignetAppStoreAPIPaused fires, and SignetConsumptionAnswerPending while the question waits out the pause")
    func appStoreAPIPausedFires() async throws {
        try await BackfillTestBed.with(count: 1) { bed in
            let fixtures = bed.directory.path("fixtures")
            let made = try await SignetProcess.output(
                ["fixtures", "--out", fixtures, "--type", "CONSUMPTION_REQUEST", "--count", "1", "--stdout", "--now"], timeout: 120)
            let question = try #require(made.lines.first { $0.hasPrefix("{") }, "signet fixtures --type CONSUMPTION_REQUEST: \(made.stderr)")
            bed.fake.script([.tooManyRequests(retryAfter: .seconds(600))], on: .consumption)
            let pipeline = try Self.stdinPipeline(in: bed.directory, "paused.yaml") {
                $0.replacingOccurrences(
                    of: "  - type: fanout",
                    with: "  - type: appstore_consumption\n    interval: 1s\n    consent: all_customers_agreed_in_app_terms\n  - type: fanout")
            }
            var environment = bed.environment
            environment["SIGNET_DATA_DIR"] = bed.dataDir("paused")
            // Both ship with `for: 1m`: see rulesForTest.
            let names: Set<String> = ["SignetAppStoreAPIPaused", "SignetConsumptionAnswerPending"]
            let rules = try Self.rulesForTest(in: bed.directory, firingAt0m: names)
            try await Self.watching(
                pipeline: pipeline, environment: environment, rules: rules, directory: bed.directory, alerts: names
            ) { watched in
                try watched.signet.write(question + "\n")
                // The answer is sent, Apple asks for a 10-minute pause: the consumption budget waits.
                let samples = try await watched.waitForMetrics(#"signet_appstore_api_paused_until_seconds{endpoint="consumption"} ahead"#) { samples in
                    Self.total(samples, "signet_appstore_api_paused_until_seconds", [#"endpoint="consumption""#]) > Date().timeIntervalSince1970 + 60
                }
                let until = Self.total(samples, "signet_appstore_api_paused_until_seconds", [#"endpoint="consumption""#])
                #expect(until < Date().timeIntervalSince1970 + 601, "paused until \(until)")
                try await watched.expectFiring(["SignetAppStoreAPIPaused"]) { alerts in
                    Self.firing(alerts, "SignetAppStoreAPIPaused").contains {
                        $0["endpoint"] == "consumption" && $0["environment"] == "Sandbox" && $0["job"] == "signet" && $0["instance"] == watched.target
                    }
                }
                // The responder's sweep waits out the pause inside its answer call; the backlog
                // gauges are read apart from it, so the waiting question shows meanwhile.
                _ = try await watched.waitForMetrics("signet_consumption_pending 1 during the pause") { samples in
                    Self.total(samples, "signet_consumption_pending", []) == 1
                }
                try await Self.expectPendingRefundQuestionAlert(store: bed.dataDir("paused") + "/signet.sqlite", watched: watched)
                #expect(bed.fake.requests(.consumption).count == 1, "asked again during the pause: \(bed.fake.requests.map(\.route))")
            }
        }
    }

    @Test("a restart whose delivery-health file holds a success three hours old: SignetDeliveryRoundTripStale fires at once, not after the next success")
    func deliveryRoundTripStaleFiresAfterRestart() async throws {
        try await BackfillTestBed.with(count: 1) { bed in
            let data = bed.dataDir("stale")
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            // What a previous run kept (docs/operations.md: state_file, read by `signet appstore health`).
            let seen = Int64(Date().timeIntervalSince1970 * 1000) - 3 * 3_600_000
            try Data("""
                [{"token": "earlier", "requestedAt": \(seen - 1500), "seenAt": \(seen), "attempts": [{"date": \(seen - 1000), "result": "SUCCESS"}], "result": "success"}]
                """.utf8).write(to: URL(fileURLWithPath: data + "/delivery-health.json"))
            let pipeline = try Self.stdinPipeline(in: bed.directory, "stale.yaml") {
                $0.replacingOccurrences(of: "  - type: dedupe", with: "  - type: appstore_delivery_health\n    interval: 1h\n    timeout: 5m\n    poll: 1s\n  - type: dedupe")
            }
            var environment = bed.environment
            environment["SIGNET_DATA_DIR"] = data
            // SignetDeliveryRoundTripStale ships with `for: 1m`: see rulesForTest.
            let rules = try Self.rulesForTest(in: bed.directory, firingAt0m: ["SignetDeliveryRoundTripStale"])
            try await Self.watching(
                pipeline: pipeline, environment: environment, rules: rules, directory: bed.directory,
                alerts: ["SignetDeliveryRoundTripStale"], quietFirst: false
            ) { watched in
                let samples = try await watched.waitForMetrics("the last success restored") { samples in
                    Self.total(samples, "signet_delivery_round_trip_last_success_timestamp_seconds", []) > 0
                }
                #expect(Self.total(samples, "signet_delivery_round_trip_last_success_timestamp_seconds", []) == Double(seen) / 1000)
                try await watched.expectFiring(["SignetDeliveryRoundTripStale"]) { alerts in
                    Self.firing(alerts, "SignetDeliveryRoundTripStale").contains { $0["job"] == "signet" && $0["instance"] == watched.target }
                }
            }
        }
    }

    /// Five minutes of waiting for the one pending refund question, made in the test: its
    /// receivedAt (Unix milliseconds, in the JSON record of SQLiteSchema's consumption_requests)
    /// moved ten minutes back in the running signet's store; then its age on /metrics passes 300
    /// and SignetConsumptionAnswerPending fires.
    static func expectPendingRefundQuestionAlert(store: String, watched: Watched) async throws {
        let update = try await offPool {
            try SignetProcess.run(
                executable: ChildProcess.env,
                ["sqlite3", "-cmd", ".timeout 10000", store,
                 "UPDATE consumption_requests SET record = json_set(record, '$.receivedAt', json_extract(record, '$.receivedAt') - 600000) WHERE json_extract(record, '$.status') = 'pending'; SELECT changes();"],
                timeout: 30)
        }
        #expect(update.exitCode == 0 && update.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "sqlite3: \(update.stdoutText)\(update.stderr)")
        _ = try await watched.waitForMetrics("signet_consumption_oldest_pending_age_seconds > 300") { samples in
            total(samples, "signet_consumption_oldest_pending_age_seconds", []) > 300
        }
        try await watched.expectFiring(["SignetConsumptionAnswerPending"]) { alerts in
            firing(alerts, "SignetConsumptionAnswerPending").contains { $0["job"] == "signet" && $0["instance"] == watched.target }
        }
    }

    // MARK: Watching a run

    /// A running `signet` and a Prometheus scraping its operators' listener every second.
    struct Watched {
        let signet: ChildProcess
        let prometheus: ChildProcess
        let api: Prometheus
        /// signet's /metrics URL and its scrape target (the `instance` label).
        let metrics: String
        let target: String

        /// Polls signet's /metrics until `ready` holds (60 s at most).
        func waitForMetrics(_ what: String, _ ready: ([String: Double]) -> Bool) async throws -> [String: Double] {
            var samples: [String: Double] = [:]
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline && signet.isRunning {
                samples = parsePrometheus(try await curl(metrics))
                if ready(samples) { return samples }
                try await Task.sleep(for: .milliseconds(200))
            }
            try #require(ready(samples), "signet's /metrics never showed \(what): \(signet.stderrTail())")
            return samples
        }

        /// Polls /api/v1/alerts until `firing` holds (given every active alert), at most
        /// ``AlertsFireFromTheBinaryTests/firingTimeout``; records an issue with the alerts JSON
        /// and signet's stderr otherwise.
        func expectFiring(_ names: Set<String>, _ firing: ([[String: Any]]) -> Bool) async throws {
            let start = ContinuousClock.now
            var answer: [String: Any] = [:]
            var alerts: [[String: Any]] = []
            var fired = false
            while !fired && ContinuousClock.now < start + firingTimeout && prometheus.isRunning {
                answer = try await api.get("/api/v1/alerts", [:])
                alerts = ((answer["data"] as? [String: Any])?["alerts"] as? [[String: Any]]) ?? []
                fired = firing(alerts)
                if !fired { try await Task.sleep(for: .seconds(1)) }
            }
            let json = (try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "\(answer)"
            #expect(fired, "\(names.sorted()) did not fire within \(firingTimeout): /api/v1/alerts: \(json)\nsignet: \(signet.stderrTail())\nprometheus: \(prometheus.stderrTail(5))")
            if fired {
                let labels = names.sorted().flatMap { AlertsFireFromTheBinaryTests.firing(alerts, $0) }
                    .map { $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }
                print("firing \(ContinuousClock.now - start) after the cause: \(labels.joined(separator: "; "))")
            }
        }
    }

    /// Starts `signet run --pipeline pipeline` and a Prometheus scraping it with `rules`; once
    /// Prometheus answers `before` with a series and evaluated the rules a few times with none
    /// of `alerts` active (an alert active before its cause would prove nothing), runs `body`.
    /// Stops both processes at the end. `quietFirst: false` skips the quiet check for a cause
    /// the process finds when it starts (what a previous run left).
    static func watching(
        pipeline: String, environment: [String: String], rules: String, directory: TemporaryDirectory, alerts names: Set<String>,
        before: String = #"up{job="signet"} == 1"#, quietFirst: Bool = true, _ body: (Watched) async throws -> Void
    ) async throws {
        let signet = try ChildProcess.signet(["run", "--pipeline", pipeline], environment: environment)
        defer { signet.stop() }
        _ = await signet.waitUntil(timeout: .seconds(30)) { listeningPort(in: signet.stderrText) != nil || !signet.isRunning }
        let port = try #require(listeningPort(in: signet.stderrText), "no listener: \(signet.stderrTail())")
        let (prometheus, api) = try Prometheus.start(scraping: "127.0.0.1:\(port)", rules: rules, in: directory)
        defer { prometheus.stop() }
        var seen = false
        let scraped = ContinuousClock.now + .seconds(40)
        while !seen && ContinuousClock.now < scraped && prometheus.isRunning {
            try await Task.sleep(for: .milliseconds(500))
            seen = (try? await api.query(before).isEmpty == false) ?? false
        }
        try #require(seen, "Prometheus never answered \(before): \(prometheus.stderrTail())\nsignet: \(signet.stderrTail())")
        if quietFirst {
            try await Task.sleep(for: .seconds(3))
            let quiet = try await api.get("/api/v1/alerts", [:])
            let early = (((quiet["data"] as? [String: Any])?["alerts"] as? [[String: Any]]) ?? []).filter {
                names.contains((($0["labels"] as? [String: String]) ?? [:])["alertname"] ?? "")
            }
            #expect(early.isEmpty, "active before the cause: \(early)")
        }
        try await body(Watched(
            signet: signet, prometheus: prometheus, api: api, metrics: "http://127.0.0.1:\(port)/metrics", target: "127.0.0.1:\(port)"))
    }

    /// `signet fixtures --count count` in `directory`/fixtures; the folder.
    static func fixtures(in directory: TemporaryDirectory, count: Int) async throws -> String {
        let fixtures = directory.path("fixtures")
        let made = try await SignetProcess.output(["fixtures", "--out", fixtures, "--count", "\(count)"], timeout: 120)
        try #require(made.exitCode == 0, "signet fixtures: \(made.stderr)")
        return fixtures
    }

    /// Pipelines/stdin.yaml edited by `edit`, with an operators' listener on a free port.
    static func stdinPipeline(in directory: TemporaryDirectory, _ name: String, _ edit: (String) -> String) throws -> String {
        let shipped = try String(contentsOfFile: FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml").path, encoding: .utf8)
        let edited = edit(shipped)
        return try directory.write(name, edited + "\nhttp:\n  address: 127.0.0.1:0\n")
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
        try await watching(pipeline: pipeline, environment: environment, rules: rules, directory: directory, alerts: names, before: before) { watched in
            try watched.signet.write(input.joined(separator: "\n") + "\n")
            let samples = try await watched.waitForMetrics("the events", ready)
            try checkMetrics(samples, started)
            try await watched.expectFiring(names) { firing(samples, $0) }
            watched.signet.closeInput()
            #expect(await watched.signet.exit(within: .seconds(30)) == 0, "signet: \(watched.signet.stderrTail())")
        }
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
