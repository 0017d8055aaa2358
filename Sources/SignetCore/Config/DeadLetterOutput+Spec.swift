extension DeadLetterOutput {
    /// The keys `dead_letter:` takes on top of its sink type's own.
    public static let fields: [ConfigField] = [
        ConfigField(
            "format", .enumeration(Format.allCases.map(\.rawValue)), .default("json"),
            "json: one object per reject with reason, detail, stage, source, rejectedAt, input or inputBase64 "
                + "(Schemas/dead-letter.schema.json); raw: the input bytes unchanged, the facts in headers "
                + "signet-reason, signet-detail, signet-stage, signet-source (a Kafka topic you can replay)"),
        ConfigField(
            "max_input_bytes", .int(64...(64 << 20)), .default("1048576"),
            "json format: inputs longer than this are cut (the record keeps the full length)", advanced: true),
    ]
}
