import Synchronization

/// Where a running pipeline is in its life, as the runner reports it, plus the
/// readiness of every component that adopts ``HealthReporting``. Shared between the
/// runner (which moves the phase) and whoever serves `/readyz`.
public final class PipelineHealth: Sendable {
    /// The runner's phase.
    public enum Phase: String, Sendable {
        /// Opening the source, stages, sinks and resources.
        case starting
        /// Everything open; reading input.
        case running
        /// A stop was requested: finishing in-flight batches, taking no new input.
        case draining
        /// The run ended (input exhausted, stopped, or failed).
        case stopped
    }

    private let state = Mutex(Phase.starting)

    /// Starting, not ready.
    public init() {}

    /// Where the pipeline is now.
    public var phase: Phase { state.withLock { $0 } }

    /// Moves to `phase`; a stopped pipeline stays stopped and a draining one never runs again.
    package func enter(_ phase: Phase) {
        state.withLock { current in
            switch (current, phase) {
            case (.stopped, _), (.draining, .running), (.draining, .starting): return
            default: current = phase
            }
        }
    }

    /// Readiness of the whole pipeline: running, and every reporting component ready.
    public func readiness(of pipeline: Pipeline) async -> [HealthCheck] {
        let phase = self.phase
        var checks = [HealthCheck(component: "pipeline", isReady: phase == .running, detail: phase.rawValue)]
        guard phase == .running else { return checks }
        var reporters: [(String, any HealthReporting)] = []
        if let source = pipeline.source as? any HealthReporting { reporters.append(("source", source)) }
        for named in pipeline.sinks {
            if let sink = named.sink as? any HealthReporting { reporters.append(("sinks.\(named.name)", sink)) }
        }
        for named in pipeline.resources {
            if let resource = named.resource as? any HealthReporting {
                reporters.append(("stores.\(named.name)", resource))
            }
        }
        for stage in pipeline.stages {
            if let reporter = stage as? any HealthReporting { reporters.append(("stages.\(stage.name)", reporter)) }
        }
        for (component, reporter) in reporters {
            var check = await reporter.readiness()
            check.component = component
            checks.append(check)
        }
        return checks
    }
}
