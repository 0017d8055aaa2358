import Foundation
import SignetCore
import SignetHTTP
import SignetTestSupport
import Testing

/// 503 with Retry-After: the source's server alone (no runner takes its records), so the
/// pipeline "cannot take it now" deterministically.
@Suite("http source: 503 with Retry-After", .serialized, .timeLimit(.minutes(10)))
struct WebhookUnavailableTests {
    static let body = #"{"signedPayload": "a.b.c"}"#

    static func openSource(_ configure: (inout HTTPSource.Options) -> Void) async throws -> (HTTPSource, String) {
        var options = HTTPSource.Options()
        options.address = ListenAddress(host: "127.0.0.1", port: 0)
        options.retryAfter = .seconds(7)
        configure(&options)
        let source = HTTPSource(options: options)
        try await source.open()
        let port = try #require(source.boundAddress?.port)
        return (source, "http://127.0.0.1:\(port)/notifications")
    }

    @Test("draining: new requests get 503 while queued records still drain")
    func draining() async throws {
        let (source, url) = try await Self.openSource { _ in }
        let waiting = Task { try await Curl.request(url, body: Self.body) }
        for _ in 0..<500 where source.statistics.accepted < 1 { try await Task.sleep(for: .milliseconds(10)) }
        await source.stop()
        #expect(!source.isAccepting)
        let refused = try await Curl.request(url, body: Self.body)
        #expect(refused.status == 503)
        #expect(refused.headers.lowercased().contains("retry-after: 7"))
        #expect(refused.body.contains("draining"))
        // The queued record is still handed over and, once committed, answered 200.
        let batch = try #require(try await source.nextBatch(maxRecords: 10))
        #expect(batch.count == 1)
        #expect(try await source.nextBatch(maxRecords: 10) == nil)
        try await source.commit(batch.map(\.position))
        #expect(try await waiting.value.status == 200)
        try await source.close()
    }

    @Test("backpressure: beyond max_in_flight, 503; what close() finds uncommitted gets 503 too")
    func backpressure() async throws {
        let (source, url) = try await Self.openSource { $0.maxInFlight = 1 }
        let waiting = Task { try await Curl.request(url, body: Self.body) }
        for _ in 0..<500 where source.statistics.accepted < 1 { try await Task.sleep(for: .milliseconds(10)) }
        let refused = try await Curl.request(url, body: Self.body)
        #expect(refused.status == 503)
        #expect(refused.body.contains("backpressure"))
        try await source.close()
        let abandoned = try await waiting.value
        #expect(abandoned.status == 503, "never committed: the sender must retry")
        #expect(abandoned.body.contains("stopped"))
    }

    @Test("no commit within response_timeout: 503, and the record stays in the pipeline")
    func responseTimeout() async throws {
        let (source, url) = try await Self.openSource { $0.responseTimeout = .milliseconds(300) }
        let reply = try await Curl.request(url, body: Self.body)
        #expect(reply.status == 503)
        #expect(reply.body.contains("timeout"))
        #expect(source.statistics.inFlight == 1)
        let batch = try #require(try await source.nextBatch(maxRecords: 10))
        #expect(batch.map(\.raw) == [Array(Self.body.utf8)])
        try await source.commit(batch.map(\.position))
        #expect(source.statistics.committed == 1)
        try await source.close()
    }

    @Test("an address already in use fails open() with a configuration error naming it (exit 2 in signet run)")
    func addressInUse() async throws {
        let (first, url) = try await Self.openSource { _ in }
        let port = try #require(URLComponents(string: url)?.port)
        var options = HTTPSource.Options()
        options.address = ListenAddress(host: "127.0.0.1", port: port)
        let second = HTTPSource(options: options)
        let error = await #expect(throws: ConfigError.self) { try await second.open() }
        #expect(error?.message == "cannot listen on 127.0.0.1:\(port) for the webhook (source.address): "
            + "the address is already in use (another process listens on that port)")
        try await first.close()
    }
}
