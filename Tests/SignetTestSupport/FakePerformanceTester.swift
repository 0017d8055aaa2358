import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Apple's performance test of a Get Retention Message endpoint, as docs/retention.md §3
/// describes it, for ``FakeRetentionMessaging``: `totalRequests` signed requests with at most
/// `maxConcurrentRequests` in flight, each a success when answered 200 within
/// `responseTimeThreshold` ms with exactly one `RealtimeResponseBody` variant; `PASS` when the
/// success rate reaches `successRateThreshold` percent. Apple spreads its requests over
/// `totalDuration`; this sends them back to back, the harder case.
public enum FakePerformanceTester {
    /// A runner sending each request's body (`body(originalTransactionId)`) to `local(target)`:
    /// the configured https URL mapped to the endpoint's local address (TLS is not under test).
    public static func runner(
        local: @escaping @Sendable (String) -> String, body: @escaping @Sendable (String) throws -> [UInt8]
    ) -> FakeRetentionMessaging.Runner {
        { target, config, originalTransactionId in
            let total = config["totalRequests"] ?? 100, concurrency = max(1, config["maxConcurrentRequests"] ?? 10)
            let threshold = config["responseTimeThreshold"] ?? 700, passRate = config["successRateThreshold"] ?? 95
            let url = local(target)
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            var times: [Int] = [], failures: [String: Int] = [:], successes = 0
            await withTaskGroup(of: (milliseconds: Int, failure: String?).self) { group in
                var launched = 0
                func launch() {
                    launched += 1
                    let request: [UInt8]? = try? body(originalTransactionId)
                    group.addTask { await attempt(client, url: url, body: request, threshold: threshold) }
                }
                while launched < min(concurrency, total) { launch() }
                for await outcome in group {
                    times.append(outcome.milliseconds)
                    if let failure = outcome.failure { failures[failure, default: 0] += 1 } else { successes += 1 }
                    if launched < total { launch() }
                }
            }
            try? await client.shutdown()
            let sorted = times.sorted()
            func percentile(_ p: Double) -> Int { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] }
            let rate = total == 0 ? 0 : successes * 100 / total
            return FakeRetentionMessaging.Outcome(
                result: rate >= passRate ? "PASS" : "FAIL", successRate: rate,
                responseTimes: [
                    "average": sorted.isEmpty ? 0 : sorted.reduce(0, +) / sorted.count, "p50": percentile(0.5), "p90": percentile(0.9),
                    "p95": percentile(0.95), "p99": percentile(0.99),
                ],
                failures: failures)
        }
    }

    /// One request: its time, and Apple's `sendAttemptResult` when it failed.
    private static func attempt(_ client: HTTPClient, url: String, body: [UInt8]?, threshold: Int) async -> (milliseconds: Int, failure: String?) {
        guard let body else { return (0, "OTHER") }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let started = ContinuousClock.now
        func elapsed() -> Int { Int((ContinuousClock.now - started) / .milliseconds(1)) }
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(threshold) * 2))
            let answer = try await response.body.collect(upTo: 1 << 20)
            let milliseconds = elapsed()
            guard response.status.code == 200 else { return (milliseconds, "UNSUCCESSFUL_HTTP_RESPONSE_CODE") }
            let object = (try? JSONSerialization.jsonObject(with: Data(answer.readableBytesView))) as? [String: Any]
            let variants = Set(object?.keys.map { $0 } ?? []).intersection(["message", "alternateProduct", "promotionalOffer"])
            guard object?.count == 1, variants.count == 1 else { return (milliseconds, "INVALID_RESPONSE") }
            return (milliseconds, milliseconds > threshold ? "TIMED_OUT" : nil)
        } catch {
            let milliseconds = elapsed()
            return (milliseconds, milliseconds >= threshold ? "TIMED_OUT" : "NO_RESPONSE")
        }
    }
}
