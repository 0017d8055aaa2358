/// Registers the sources and sinks that live in SignetCore: `stdin`, `file` (source),
/// `stdout`, `file` (sink). Their keys are declared in ``ComponentSpec/stdinSource``,
/// ``ComponentSpec/fileSource``, ``ComponentSpec/stdoutSink`` and ``ComponentSpec/fileSink``.
extension ComponentRegistry {
    /// Registers the core components: the `stdin` and `file` sources and the `stdout` and `file` sinks.
    public mutating func registerCoreComponents() {
        registerSource(.stdinSource) { config, _ in
            LineSource.standardInput(options: try LineSource.Options.configuration.options(config))
        }
        registerSource(.fileSource) { config, _ in
            LineSource(path: try config.string("path"), options: try LineSource.Options.fileConfiguration.options(config))
        }
        registerSink(.stdoutSink) { _, _ in
            StdoutSink()
        }
        registerSink(.fileSink) { config, _ in
            FileSink(path: try config.string("path"), options: try FileSink.Options.configuration.options(config))
        }
    }
}
