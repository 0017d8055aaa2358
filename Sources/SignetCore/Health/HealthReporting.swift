/// A component that can say whether it is ready to do its work: a source whose Kafka
/// partitions are assigned, a store whose database answers, a sink whose connection is
/// up. The admin listener's `/readyz` asks every component of the pipeline that adopts
/// this protocol; components that don't are taken as ready once the pipeline is open.
public protocol HealthReporting: Sendable {
    /// Checks readiness now. Called on every `/readyz` request, so keep it cheap
    /// (no network round trip beyond a local database ping).
    func readiness() async -> HealthCheck
}

/// One component's answer to a readiness check.
public struct HealthCheck: Sendable, Equatable {
    /// The component (`source`, `sinks.events`, `stores.default`).
    public var component: String
    /// Whether the component can do its work now.
    public var isReady: Bool
    /// Why not ready (or a short note when ready).
    public var detail: String

    /// A check of `component`; `detail` says why it is not ready.
    public init(component: String, isReady: Bool, detail: String = "") {
        self.component = component
        self.isReady = isReady
        self.detail = detail
    }

    /// Ready, with an optional note.
    public static func ready(_ component: String, _ detail: String = "") -> HealthCheck {
        HealthCheck(component: component, isReady: true, detail: detail)
    }

    /// Not ready, with the reason.
    public static func notReady(_ component: String, _ detail: String) -> HealthCheck {
        HealthCheck(component: component, isReady: false, detail: detail)
    }
}
