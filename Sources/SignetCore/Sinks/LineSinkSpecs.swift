extension ComponentSpec {
    /// `type: stdout` (a sink or the dead-letter sink).
    package static let stdoutSink = ComponentSpec(
        name: "stdout", summary: "one message value per line on standard output",
        description: "Acknowledged when the kernel accepted the write; a closed pipe is an error.")

    /// `type: file` (a sink or the dead-letter sink).
    package static let fileSink = ComponentSpec(
        name: "file", summary: "appends one message value per line to a file (fsync per batch by default)",
        description: "Acknowledged when written and, with fsync, on disk.",
        fields: [ConfigField("path", .string, .required, "the file to append to (created if missing)", example: "signet-data/events.ndjson")]
            + FileSink.Options.configuration.fields)
}

extension FileSink.Options {
    /// The `file` sink's keys but its path, their defaults ``FileSink/Options/init()``'s.
    package static let configuration = ConfigBindings(defaults: FileSink.Options(), [
        ConfigBinding("fsync", \.fsync, .bool, "fsync after every batch before acknowledging it"),
        ConfigBinding(
            "max_bytes", \.maxBytes, .int(0...Int.max),
            "rotate by size: a batch that would take the file past this goes to a new one, the full file becomes PATH.1 "
                + "(older ones PATH.2, ...); batches are never split; 0: never (use logrotate and SIGHUP)",
            example: "104857600"),
        ConfigBinding("keep", \.keep, .int(1...1000), "rotated files kept with max_bytes (PATH.1 ... PATH.keep); older ones are deleted"),
    ])
}
