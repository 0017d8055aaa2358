import Foundation
import ServiceLifecycle
import SignetCore
import SignetHTTP
import SignetTestSupport
import Synchronization
import Testing
import UnixSignals

/// ``PipelineLifecycle``: the webhook pipeline and another service in one ServiceGroup; a
/// signal drains the pipeline first, then stops the other service.
@Suite("pipeline lifecycle", .serialized, .timeLimit(.minutes(10)))
struct PipelineLifecycleTests {
    /// Stands for an admin server: waits for graceful shutdown and notes what the pipeline
    /// had done by then.
    final class ProbeService: Service {
        let seen = Mutex<(draining: Bool, finished: Bool)?>(nil)
        let lifecycle = Mutex<PipelineLifecycle?>(nil)

        func run() async throws {
            try await gracefulShutdown()
            let pipeline = lifecycle.withLock { $0?.pipeline }
            seen.withLock { $0 = (pipeline?.isDraining ?? false, pipeline?.outcome != nil) }
        }
    }

    @Test("a signal drains the pipeline (every accepted request committed), then stops the other services")
    func signalDrainsPipelineFirst() async throws {
        let probe = ProbeService()
        let harness = try await WebhookHarness(count: 2) { runner in
            let lifecycle = PipelineLifecycle(runner: runner, services: [probe], signals: [.sigusr2])
            probe.lifecycle.withLock { $0 = lifecycle }
            return Task {
                guard case .finished(let summary) = try await lifecycle.run() else { throw SourceError("drain abandoned") }
                return summary
            }
        }
        let reply = try await Curl.request(harness.url, body: harness.notifications[0])
        #expect(reply.status == 200)
        kill(getpid(), SIGUSR2)
        let summary = try await harness.run.value
        #expect(summary.read == 1)
        #expect(summary.passed == 1)
        let seen = try #require(probe.seen.withLock { $0 })
        #expect(seen.draining, "the pipeline was told to drain")
        #expect(seen.finished, "the other service was stopped only after the pipeline finished")
        let after = try await Curl.request(harness.url, body: harness.notifications[1])
        #expect(after.status == 0, "the listener is closed after the drain")
        harness.directory.remove()
    }
}
