extension ComponentSpec {
    /// `source: {type: stdin}`.
    package static let stdinSource = ComponentSpec(
        name: "stdin", summary: "NDJSON lines from standard input",
        fields: LineSource.Options.configuration.fields,
        examples: ["source:\n  type: stdin\n  max_line_bytes: 1048576"],
        rejects: [.lineTooLarge])

    /// `source: {type: file}`.
    package static let fileSource = ComponentSpec(
        name: "file", summary: "NDJSON lines from a file, optionally resuming from a checkpoint",
        fields: [ConfigField("path", .string, .required, "the NDJSON file to read", example: "notifications.ndjson")]
            + LineSource.Options.fileConfiguration.fields,
        examples: ["source:\n  type: file\n  path: notifications.ndjson\n  checkpoint: signet-data/input.checkpoint"],
        rejects: [.lineTooLarge])
}

extension LineSource.Options {
    /// The keys every line source takes, their defaults ``LineSource/Options/init()``'s.
    package static let configuration = ConfigBindings(defaults: LineSource.Options(), lineKeys)

    /// A file source's keys: every line source's and its checkpoint.
    package static let fileConfiguration = ConfigBindings(
        defaults: LineSource.Options(),
        lineKeys + [
            ConfigBinding(
                "checkpoint", \.checkpointPath, .string,
                "a file where the byte offset after the last committed line is kept (atomically); a restart resumes after it",
                example: "signet-data/input.checkpoint")
        ])

    private static let lineKeys: [ConfigBinding<LineSource.Options>] = [
        ConfigBinding(
            "max_line_bytes", \.maxLineBytes, .int(1024...(256 << 20)),
            "a longer line is rejected as line_too_large (its first bytes kept in the dead letter)"),
        ConfigBinding("skip_blank_lines", \.skipBlankLines, .bool, "blank lines are skipped instead of rejected", advanced: true),
    ]
}
