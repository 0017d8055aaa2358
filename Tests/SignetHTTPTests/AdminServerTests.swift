import Foundation
import SignetCore
import SignetHTTP
import SignetTestSupport
import Testing

@Suite("Admin listener: /metrics, /healthz, /readyz")
struct AdminServerTests {
    @Test("metrics scraped and parsed during and after a run match what the pipeline did")
    func metricsDuringRun() async throws {
        let bed = try ServiceTestBed(count: 120)
        defer { bed.remove() }
        let input = bed.directory.appendingPathComponent("input.ndjson")
        let lines = try String(contentsOf: bed.notifications, encoding: .utf8) + String(contentsOf: bed.forged, encoding: .utf8)
        try lines.write(to: input, atomically: true, encoding: .utf8)
        let inputCount = lines.split(separator: "\n").count
        let pipeline = try bed.load(bed.pipelineYAML(input: input, sink: "type: file\npath: \(bed.directory.path)/events.ndjson", batchSize: 8))
        let (runner, admin, _) = try bed.service(pipeline)
        let server = try #require(admin)

        let samples = try await withListening(server) { port in
            let run = Task { try await runner.run() }
            // A scrape while the run goes on: valid text format whatever the counts.
            let during = try await pythonGET(port: port, path: "/metrics")
            #expect(during.status == 200)
            _ = try await run.value
            let after = try await pythonGET(port: port, path: "/metrics")
            #expect(after.status == 200)
            #expect(after.body.contains("# TYPE signet_records_read_total counter"))
            #expect(after.body.contains("# TYPE signet_batch_duration_seconds histogram"))
            return parsePrometheus(after.body)
        }

        let events = try bed.lines("events.ndjson")
        let deadLetters = try bed.lines("dead-letter.ndjson")
        func total(_ prefix: String) -> Double {
            samples.filter { $0.key == prefix || $0.key.hasPrefix(prefix + "{") }.values.reduce(0, +)
        }
        #expect(total("signet_records_read_total") == Double(inputCount))
        #expect(total("signet_records_rejected_total") == Double(deadLetters.count))
        #expect(deadLetters.count > 0)
        #expect(total("signet_dead_letters_total") == Double(deadLetters.count))
        #expect(
            total("signet_records_passed_total") + total("signet_records_rejected_total") + total("signet_records_dropped_total")
                == Double(inputCount))
        #expect(total("signet_events_total") == Double(events.count))
        #expect(samples["signet_sink_deliveries_total{sink=\"events\"}"] == Double(events.count))
        #expect(samples["signet_records_in_flight"] == 0)
        #expect((samples["signet_batch_duration_seconds_count"] ?? 0) > 0)
        // One reason label per code that the dead letters carry.
        let reasons = Set(deadLetters.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["reason"] as? String
        })
        for reason in reasons {
            #expect(samples["signet_records_rejected_total{reason=\"\(reason)\"}"] != nil, "no counter for \(reason)")
        }
    }

    @Test("readiness: 503 while starting, 200 running, 503 while draining and after; healthz always 200")
    func readinessFlipsDuringDrain() async throws {
        let bed = try ServiceTestBed(count: 3)
        defer { bed.remove() }
        let receiver = try TestReceiver(plan: ["hold"], directory: bed.directory)
        defer { receiver.stop() }
        let pipeline = try bed.load(bed.pipelineYAML(input: bed.notifications, sink: "type: http\nurl: \(receiver.url)"))
        let (runner, admin, _) = try bed.service(pipeline)
        let server = try #require(admin)
        let release = receiver.releaser

        try await withListening(server) { port in
            let before = try await pythonGET(port: port, path: "/readyz")
            #expect(before.status == 503)
            #expect(before.body.contains("starting"))
            let run = Task { try await runner.run() }
            // The first delivery is held by the receiver, so the runner stays running.
            var ready = try await pythonGET(port: port, path: "/readyz")
            for _ in 0..<200 where ready.status != 200 {
                try await Task.sleep(for: .milliseconds(50))
                ready = try await pythonGET(port: port, path: "/readyz")
            }
            #expect(ready.status == 200)
            await runner.requestStop()
            let draining = try await pythonGET(port: port, path: "/readyz")
            #expect(draining.status == 503)
            #expect(draining.body.contains("draining"))
            let alive = try await pythonGET(port: port, path: "/healthz").status
            #expect(alive == 200)
            release()
            _ = try await run.value
            let stopped = try await pythonGET(port: port, path: "/readyz")
            #expect(stopped.status == 503)
            #expect(stopped.body.contains("stopped"))
        }
    }

    @Test("unknown paths answer 404")
    func unknownPath() async throws {
        let bed = try ServiceTestBed(count: 1)
        defer { bed.remove() }
        let pipeline = try bed.load(bed.pipelineYAML(input: bed.notifications, sink: "type: file\npath: \(bed.directory.path)/e.ndjson"))
        let (_, admin, _) = try bed.service(pipeline)
        try await withListening(try #require(admin)) { port in
            let status = try await pythonGET(port: port, path: "/nope").status
            #expect(status == 404)
        }
    }
}
