public import SignetCore

/// Ready once the group gave this member partitions (`/readyz`).
extension KafkaSource: HealthReporting {
    public func readiness() async -> HealthCheck {
        let partitions = assignment.count
        return partitions > 0
            ? .ready("source", "\(partitions) partitions assigned")
            : .notReady("source", "no Kafka partitions assigned (joining the group, or more members than partitions)")
    }
}
