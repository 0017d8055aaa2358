import Foundation
import Prometheus
import SignetCore
import SignetHTTP
import SignetTestSupport
import Testing

@Suite("http sink: per-request retries are counted")
struct HTTPSinkRetryMetricTests {
    @Test("two 503s then a 200: one message delivered, signet_http_sink_request_retries_total{sink} is 2")
    func retriesAreCounted() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-sink-retries-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try TestReceiver(plan: ["503", "503"], directory: directory)
        defer { receiver.stop() }

        var options = HTTPSink.Options(url: receiver.url)
        options.initialBackoff = .milliseconds(10)
        let registry = PrometheusCollectorRegistry()
        let sink = HTTPSink(options: options, name: "backend", metrics: PrometheusMetricsFactory(registry: registry))
        try await sink.open()
        try await sink.write([OutputMessage(value: Array(#"{"eventId":"e1","type":"subscribed"}"#.utf8))])
        try await sink.close()

        let actions = try receiver.requests().compactMap { $0["action"] as? String }
        #expect(actions == ["503", "503", "200"])
        let samples = parsePrometheus(registry.emitToString())
        #expect(samples[#"signet_http_sink_request_retries_total{sink="backend"}"#] == 2)
    }
}
