public import Testing

extension Tag {
    /// Whole-system tests: the `signet` binary, Kafka mock clusters, kcat, kills and restarts.
    /// The slow part of the suite; `swift test --skip SignetEndToEndTests` runs the rest alone.
    @Tag public static var endToEnd: Self
}
