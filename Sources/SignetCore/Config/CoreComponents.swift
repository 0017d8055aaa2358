/// Registers the sources and sinks that live in SignetCore: `stdin`, `file` (source),
/// `stdout`, `file` (sink).
extension ComponentRegistry {
    public mutating func registerCoreComponents() {
        registerSource("stdin", summary: "NDJSON lines from standard input") { config, _ in
            LineSource.standardInput(options: try Self.lineOptions(config, allowCheckpoint: false))
        }
        registerSource("file", summary: "NDJSON lines from a file, optionally resuming from a checkpoint") { config, _ in
            let path = try config.string("path")
            return LineSource(path: path, options: try Self.lineOptions(config, allowCheckpoint: true))
        }
        registerSink("stdout", summary: "one message value per line on standard output") { _, _ in
            StdoutSink()
        }
        registerSink("file", summary: "appends one message value per line to a file (fsync per batch by default)") { config, _ in
            FileSink(path: try config.string("path"), fsync: try config.bool("fsync", default: true))
        }
    }

    private static func lineOptions(_ config: ConfigObject, allowCheckpoint: Bool) throws(ConfigError) -> LineSource.Options {
        var options = LineSource.Options()
        options.maxLineBytes = try config.int("max_line_bytes", default: options.maxLineBytes, in: 1024...(256 << 20))
        options.skipBlankLines = try config.bool("skip_blank_lines", default: options.skipBlankLines)
        if allowCheckpoint { options.checkpointPath = try config.optionalString("checkpoint") }
        return options
    }
}
