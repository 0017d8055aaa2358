public import SignetCore

/// Ready when the store is open and answers a query (`/readyz`).
extension StateStoreResource: HealthReporting {
    public func readiness() async -> HealthCheck {
        do {
            _ = try roles().containedKeys([])
            return .ready("store")
        } catch {
            return .notReady("store", "\(error)")
        }
    }
}
