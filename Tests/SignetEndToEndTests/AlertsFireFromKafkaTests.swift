import Foundation
import SignetKafka
import SignetTestSupport
import Testing

extension AlertsFireFromTheBinaryTests {
    /// The three alerts on slowness, from the shipped Pipelines/kafka.yaml against librdkafka's
    /// mock cluster: a backlog of 3,000 messages on the input topic, consumed while another
    /// process (the sqlite3 shell) takes the state store's write lock for 2.5 s of every 3.5,
    /// as a stuck backup or a slow disk would. Every state transaction then waits for the lock
    /// (SQLite's busy timeout, 5 s), each batch waits for its transaction, and the topic's end
    /// stays far ahead of what was consumed.
    @Test("a state store held by another process under a backlog: SignetKafkaConsumerLagHigh, SignetStateCommitSlow and SignetCommitLatencyHigh fire")
    func slownessAlertsFire() async throws {
        let scope = try KafkaScope("alerts")
        defer { scope.close() }
        let cluster = try scope.cluster(topics: [("notifications", 1), ("entitlements", 1), ("dead-letters", 1)])
        // 3,000 messages: every twelfth a notification (a state transaction in every batch), the
        // rest lines that are no JSON (dead-lettered). Small ones: the mock broker keeps about
        // 5 MB per partition and drops the oldest beyond (as retention would), and a backlog of
        // 1,000 notifications of 13 KB each is more than that.
        let fixtures = try await Self.fixtures(in: scope.directory, count: 250)
        let notifications = try Self.lines(fixtures + "/notifications.ndjson")
        try #require(notifications.count == 250)
        let values = (0..<3000).map { $0 % 12 == 0 ? notifications[$0 / 12] : "not json \($0)" }
        let data = scope.path("data")
        let settings = PipelineSettings(brokers: cluster.bootstrapServers, group: "alerts", dataDir: data)
        let environment = settings.environment.merging(try FixturesEnvironment.read(fixtures)) { $1 }
        let names: Set<String> = ["SignetKafkaConsumerLagHigh", "SignetStateCommitSlow", "SignetCommitLatencyHigh"]
        // All three ship with `for: 10m`: see rulesForTest.
        let rules = try Self.rulesForTest(in: scope.directory, firingAt0m: names)
        try await Self.watching(
            pipeline: KafkaInput.kafkaPipeline, environment: environment, rules: rules, directory: scope.directory,
            alerts: names
        ) { watched in
            let store = data + "/signet.sqlite"
            try #require(FileManager.default.fileExists(atPath: store), "no store at \(store): \(watched.signet.stderrTail())")
            // The first hold lasts until signet has read from the backlog, and 2.5 s more: its
            // first state transaction then waits for the lock whatever the machine's load. (A fixed
            // 2.5 s hold could end before signet's first transaction on a loaded CI machine;
            // signet's back-to-back transactions then kept the shell from ever taking the lock
            // again, and no commit was slow.) Later holds take 2.5 s of every 3.5 as they can.
            let holding = scope.path("holding")
            let release = scope.path("release")
            let holder = Task {
                var first = true
                while !Task.isCancelled {
                    let hold = first ? "while [ ! -e \(release) ]; do sleep 0.05; done" : "sleep 2.5"
                    first = false
                    _ = try? await offPool {
                        try SignetProcess.run(
                            executable: ChildProcess.env,
                            [
                                "sqlite3", "-cmd", ".timeout 10000", "-cmd", "BEGIN EXCLUSIVE", "-cmd", ".shell touch \(holding)",
                                "-cmd", ".shell \(hold)", store, "COMMIT",
                            ],
                            timeout: 120)
                    }
                    // A second free between holds: SQLite's busy handler polls at most every
                    // 100 ms, so signet's waiting transaction takes the lock then, well inside its
                    // 5 s busy timeout (back to back, the holds starved it into "database is locked").
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            defer {
                holder.cancel()
                FileManager.default.createFile(atPath: release, contents: nil)
            }
            let holdStarted = ContinuousClock.now
            while !FileManager.default.fileExists(atPath: holding) {
                try #require(ContinuousClock.now < holdStarted + .seconds(60), "the sqlite3 shell never took the store's lock")
                try await Task.sleep(for: .milliseconds(50))
            }
            // The commit histogram exists before the first commit: born with its first (slow)
            // commit in it, `rate()` would never see that commit and the alert would not fire
            // for a store stuck from the start.
            let idle = parsePrometheus(try await curl(watched.metrics))
            #expect(idle["signet_state_commit_duration_seconds_count{store=\"sqlite\"}"] != nil, "no commit histogram before the first commit")
            try Kcat.produce(brokers: cluster.bootstrapServers, topic: "notifications", values: values)
            _ = try await watched.waitForMetrics("signet read from the backlog") { samples in
                Self.total(samples, "signet_records_read_total", []) > 0
            }
            // Held from here for 2.5 to 3.5 s: signet's first batch has waited more than 2 s (a slow
            // commit and a slow batch) and less than its 5 s busy timeout when the lock is free.
            // The lag alert is looked for meanwhile, since the backlog may be gone soon after.
            let read = ContinuousClock.now
            func lagAlertFiring() async -> Bool {
                let answer = (try? await watched.api.get("/api/v1/alerts", [:])) ?? [:]
                let alerts = ((answer["data"] as? [String: Any])?["alerts"] as? [[String: Any]]) ?? []
                return Self.firing(alerts, "SignetKafkaConsumerLagHigh").contains {
                    $0["topic"] == "notifications" && $0["partition"] == "0" && $0["instance"] == watched.target
                }
            }
            var lag = 0.0
            var lagFired = false
            while ContinuousClock.now < read + .seconds(3) && !(lagFired && ContinuousClock.now > read + .seconds(2.5)) {
                if lag <= 1000, let text = try? await curl(watched.metrics) {
                    lag = Self.total(parsePrometheus(text), "signet_kafka_consumer_lag", [])
                }
                lagFired = lag > 1000 && !lagFired ? await lagAlertFiring() : lagFired
                try await Task.sleep(for: .milliseconds(200))
            }
            if ContinuousClock.now < read + .seconds(2.5) { try await Task.sleep(until: read + .seconds(2.5)) }
            FileManager.default.createFile(atPath: release, contents: nil)
            #expect(lag > 1000 && lag < 3000, "signet_kafka_consumer_lag \(lag) while the store was held")
            if lagFired {
                print("firing while the store was held: SignetKafkaConsumerLagHigh")
            } else {
                try await watched.expectFiring(["SignetKafkaConsumerLagHigh"]) { alerts in
                    Self.firing(alerts, "SignetKafkaConsumerLagHigh").contains {
                        $0["topic"] == "notifications" && $0["partition"] == "0" && $0["instance"] == watched.target
                    }
                }
            }
            try await watched.expectFiring(["SignetStateCommitSlow", "SignetCommitLatencyHigh"]) { alerts in
                Self.firing(alerts, "SignetStateCommitSlow").contains { $0["store"] == "sqlite" && $0["instance"] == watched.target }
                    && Self.firing(alerts, "SignetCommitLatencyHigh").contains { $0["instance"] == watched.target }
            }
            holder.cancel()
            _ = await holder.value
            // Slow, not broken: every message is consumed and nothing went wrong meanwhile.
            _ = try await watched.waitForMetrics("all 3,000 messages done") { samples in
                Self.total(samples, "signet_kafka_consumer_lag", []) == 0
                    && Self.total(samples, "signet_notifications_verified_total", []) == 250
                    && Self.total(samples, "signet_dead_letters_total", []) == 2750
            }
        }
    }
}
