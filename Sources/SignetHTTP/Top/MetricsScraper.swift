import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SignetCore

/// Reads a running Signet's /metrics for `signet top`, through AsyncHTTPClient (the CLI
/// links no second HTTP stack: Foundation's would add libcurl to the package's dependencies).
package struct MetricsScraper: Sendable {
    /// The scraped URL: the operators' listener with `/metrics` appended when missing.
    package let url: String
    private let client: HTTPClient

    /// - Parameter listener: `http://host:port` of the `http:` section, or its full /metrics URL.
    package init(listener: String) {
        url = listener.hasSuffix("/metrics") ? listener : listener.trimmingCharacters(in: ["/"]) + "/metrics"
        client = HTTPClient(eventLoopGroupProvider: .singleton)
    }

    /// One scrape; throws on no connection, a timeout, a status other than 200 or a body over 16 MiB.
    package func scrape(timeout: Duration = .seconds(5)) async throws -> MetricsSnapshot {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .nanoseconds(timeout.clampedNanoseconds))
        let body = try await response.body.collect(upTo: 16 << 20)
        guard response.status.code == 200 else { throw ScrapeFailure(description: "HTTP \(response.status.code)") }
        return MetricsSnapshot(text: String(buffer: body), at: Self.monotonicSeconds())
    }

    /// Releases the connection pool.
    package func shutdown() async throws { try await client.shutdown() }

    /// Seconds on a monotonic clock: rates must not jump with a wall-clock change.
    static func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    struct ScrapeFailure: Error, CustomStringConvertible {
        var description: String
    }
}
