extension DeadLetterOutput {
    /// The keys `dead_letter:` takes on top of its sink type's own.
    public static let fields: [ConfigField] = configuration.fields

    /// The dead-letter keys, their defaults ``init(sink:format:maxInputBytes:)``'s; the sink
    /// is the one `dead_letter:`'s type builds, set after.
    package static let configuration = ConfigBindings<DeadLetterOutput>(defaults: DeadLetterOutput(sink: UnsetSink()), [
        ConfigBinding(
            "format", \.format, .enumeration(Format.allCases.map(\.rawValue)),
            "json: one object per reject with reason, detail, stage, source, rejectedAt, input or inputBase64 "
                + "(Schemas/dead-letter.schema.json); raw: the input bytes unchanged, the facts in headers "
                + "signet-reason, signet-detail, signet-stage, signet-source (a Kafka topic you can replay)"),
        ConfigBinding(
            "max_input_bytes", \.maxInputBytes, .int(64...(64 << 20)),
            "json format: inputs longer than this are cut (the record keeps the full length)", advanced: true),
    ])

    /// The defaults' sink, which nothing writes to: the bindings read only the format and size.
    private struct UnsetSink: Sink {
        func write(_ messages: [OutputMessage]) async throws {}
    }
}

extension DeadLetterOutput.Format: ConfigBindable {}
