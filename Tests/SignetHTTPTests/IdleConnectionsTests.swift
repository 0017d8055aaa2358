import Prometheus
@testable import SignetHTTP
import SignetTestSupport
import Synchronization
import Testing

/// Which connection ``IdleConnections`` closes, and when, with evictions that answer at once
/// (the real ones run on the connection's event loop).
@Suite("idle connections: which one makes room")
struct IdleConnectionsTests {
    /// Records the connections closed; `stays` names those that took a request meanwhile.
    final class Closed: Sendable {
        let names = Mutex<[String]>([])
        let stays: Set<String>

        init(stays: Set<String> = []) { self.stays = stays }

        func evict(_ name: String) -> IdleConnections.Evict {
            { [self] done in
                if stays.contains(name) { return done(false) }
                names.withLock { $0.append(name) }
                done(true)
            }
        }

        var all: [String] { names.withLock { $0 } }
    }

    @Test("the longest-idle goes first; with none idle, the next to turn idle goes, once for each slot asked")
    func longestIdleFirstThenOwed() {
        let registry = PrometheusCollectorRegistry()
        let idle = IdleConnections(listener: "webhook", metrics: PrometheusMetricsFactory(registry: registry))
        let closed = Closed()
        let (a, b, c, d) = (idle.register(), idle.register(), idle.register(), idle.register())
        idle.markIdle(a, evict: closed.evict("a"))
        idle.markIdle(b, evict: closed.evict("b"))
        #expect(idle.freeSlot())
        #expect(closed.all == ["a"])

        // b takes a request: none idle. One read accepted two past the limit: two slots owed.
        idle.markBusy(b)
        #expect(!idle.freeSlot())
        #expect(!idle.freeSlot())
        idle.markIdle(c, evict: closed.evict("c"))
        idle.markIdle(b, evict: closed.evict("b"))
        idle.markIdle(d, evict: closed.evict("d"))
        #expect(closed.all == ["a", "c", "b"], "d stays: nothing more is owed")

        // Below the limit again: what was owed is forgiven.
        #expect(idle.freeSlot())
        #expect(!idle.freeSlot())
        idle.slotFreed()
        idle.markIdle(a, evict: closed.evict("a2"))
        #expect(closed.all == ["a", "c", "b", "d"])
        #expect(parsePrometheus(registry.emitToString())[#"signet_http_idle_evictions_total{listener="webhook"}"#] == 4)
    }

    @Test("a connection that took a request before its eviction ran stays open, uncounted; the next longest-idle goes")
    func busyMeanwhileStays() {
        let registry = PrometheusCollectorRegistry()
        let idle = IdleConnections(listener: "http", metrics: PrometheusMetricsFactory(registry: registry))
        let closed = Closed(stays: ["a"])
        let (a, b) = (idle.register(), idle.register())
        idle.markIdle(a, evict: closed.evict("a"))
        idle.markIdle(b, evict: closed.evict("b"))
        #expect(idle.freeSlot())
        #expect(closed.all == ["b"])
        #expect(parsePrometheus(registry.emitToString())[#"signet_http_idle_evictions_total{listener="http"}"#] == 1)
    }
}
