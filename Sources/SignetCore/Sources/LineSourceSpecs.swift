extension ComponentSpec {
    /// Keys every line source takes.
    static let lineSourceFields: [ConfigField] = [
        ConfigField(
            "max_line_bytes", .int(1024...(256 << 20)), .default("1048576"),
            "a longer line is rejected as line_too_large (its first bytes kept in the dead letter)"),
        ConfigField("skip_blank_lines", .bool, .default("true"), "blank lines are skipped instead of rejected", advanced: true),
    ]

    /// `source: {type: stdin}`.
    package static let stdinSource = ComponentSpec(
        name: "stdin", summary: "NDJSON lines from standard input",
        fields: lineSourceFields,
        examples: ["source:\n  type: stdin\n  max_line_bytes: 1048576"])

    /// `source: {type: file}`.
    package static let fileSource = ComponentSpec(
        name: "file", summary: "NDJSON lines from a file, optionally resuming from a checkpoint",
        fields: [ConfigField("path", .string, .required, "the NDJSON file to read", example: "notifications.ndjson")]
            + lineSourceFields
            + [
                ConfigField(
                    "checkpoint", .string, .optional,
                    "a file where the byte offset after the last committed line is kept (atomically); a restart resumes after it",
                    example: "signet-data/input.checkpoint"),
            ],
        examples: ["source:\n  type: file\n  path: notifications.ndjson\n  checkpoint: signet-data/input.checkpoint"])
}
