import Foundation
import Logging

/// Turns a pipeline file into a ``Pipeline`` using a ``ComponentRegistry``.
///
/// The file has these top-level keys:
///
/// ```yaml
/// source:      { type: stdin, ... }          # exactly one
/// stages:      [ { type: decode }, ... ]      # in order
/// sinks:       { name: { type: stdout }, ... }
/// dead_letter: { type: file, path: ..., format: json }
/// settings:    { batch_size: 256, progress_interval: 10s, ... }
/// ```
///
/// Every problem is reported with its file, line and column; the loader keeps going
/// past a broken component so `signet lint` shows all of them at once.
public struct PipelineLoader: Sendable {
    public var registry: ComponentRegistry
    public var environment: [String: String]
    public var logger: Logger

    public init(
        registry: ComponentRegistry,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger = Logger(label: "signet")
    ) {
        self.registry = registry
        self.environment = environment
        self.logger = logger
    }

    /// Loads and builds the pipeline in the file at `path`.
    public func load(file path: String) throws(ConfigErrors) -> Pipeline {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigErrors([ConfigError("cannot read pipeline file '\(path)': \(error.localizedDescription)", at: nil)])
        }
        return try load(yaml: text, file: path)
    }

    /// Loads and builds a pipeline from YAML text; `file` names it in messages.
    public func load(yaml text: String, file: String) throws(ConfigErrors) -> Pipeline {
        try load(yaml: text, file: file, interpolator: Interpolator(environment: environment))
    }

    /// What `signet lint` reports for one file.
    public struct LintReport: Sendable {
        /// The built pipeline when the file is valid.
        public var pipeline: Pipeline?
        public var errors: [ConfigError]
        /// Variables without default that are unset here; `run` would fail on them.
        public var unsetVariables: [UnsetVariable]
    }

    /// Checks a pipeline file by building every component without running anything.
    ///
    /// Unset `${VAR}`s without default are reported separately (and expanded to a
    /// placeholder so the rest of the file is still checked): the machine that lints is
    /// often not the one that runs. Pass `strictEnvironment` to treat them as errors.
    public func lint(yaml text: String, file: String, strictEnvironment: Bool = false) -> LintReport {
        // Always expand to a placeholder so one unset variable does not hide the rest of the file.
        let interpolator = Interpolator(environment: environment, unsetPlaceholder: "1")
        var pipeline: Pipeline?
        var errors: [ConfigError] = []
        do {
            pipeline = try load(yaml: text, file: file, interpolator: interpolator)
        } catch {
            errors = error.errors
        }
        guard strictEnvironment, !interpolator.unset.isEmpty else {
            return LintReport(pipeline: pipeline, errors: errors, unsetVariables: interpolator.unset)
        }
        errors += interpolator.unset.map {
            ConfigError("environment variable \($0.name) is not set and has no default", at: $0.location)
        }
        return LintReport(pipeline: nil, errors: Self.sorted(errors), unsetVariables: interpolator.unset)
    }

    private func load(yaml text: String, file: String, interpolator: Interpolator) throws(ConfigErrors) -> Pipeline {
        var errors: [ConfigError] = []
        func attempt<T>(_ body: () throws -> T) -> T? {
            do {
                return try body()
            } catch let error as ConfigError {
                errors.append(error)
            } catch let error as ConfigErrors {
                errors.append(contentsOf: error.errors)
            } catch {
                errors.append(ConfigError("\(error)", at: nil))
            }
            return nil
        }

        let root: ConfigObject
        do {
            root = try ConfigObject(try ConfigNode.parse(yaml: text, file: file, interpolator: interpolator))
        } catch {
            throw ConfigErrors([error])
        }
        let _ = root.node("description")  // free text, for people

        let settings = attempt { try Self.settings(root.object("settings")) } ?? PipelineSettings()
        let sinkEntries = (attempt { try root.object("sinks") } ?? nil)
        let sinkNames = sinkEntries?.entries().map(\.name) ?? []

        let source: (any Source)? = attempt {
            guard let config = try root.object("source") else { throw root.missing("source") }
            return try build(config, kind: "source", path: "source", sinkNames: sinkNames, table: registry.sources)
        }

        var stages: [any Stage] = []
        if let items = attempt({ try root.list("stages") }) ?? nil {
            for (index, item) in items.enumerated() {
                if let stage = attempt({
                    try build(ConfigObject(item), kind: "stage", path: "stages[\(index)]", sinkNames: sinkNames, table: registry.stages)
                }) {
                    stages.append(stage)
                }
            }
        }

        var sinks: [NamedSink] = []
        if let sinkEntries {
            for (name, node) in sinkEntries.entries() {
                if let sink = attempt({
                    try build(ConfigObject(node), kind: "sink", path: "sinks.\(name)", sinkNames: sinkNames, table: registry.sinks)
                }) {
                    sinks.append(NamedSink(name: name, sink: sink))
                }
            }
            if sinkNames.isEmpty { errors.append(ConfigError("'sinks' needs at least one sink", at: sinkEntries.location)) }
        } else if root.node("sinks") == nil {
            // Absent, or present with no value (`sinks:`): either way nothing would be delivered.
            errors.append(root.contains("sinks") ? root.error("'sinks' needs at least one sink", key: "sinks") : root.missing("sinks"))
        }

        let deadLetter: DeadLetterOutput? = attempt {
            guard let config = try root.object("dead_letter") else {
                throw ConfigError(
                    "the pipeline needs 'dead_letter' so that rejected input is kept (for example: "
                        + "dead_letter: { type: file, path: dead-letter.ndjson })", at: root.location)
            }
            let format = try DeadLetterOutput.Format(
                rawValue: config.choice("format", DeadLetterOutput.Format.allCases.map(\.rawValue), default: "json"))!
            let maxInput = try config.int("max_input_bytes", default: 1 << 20, in: 64...(64 << 20))
            let sink = try build(config, kind: "sink", path: "dead_letter", sinkNames: sinkNames, table: registry.sinks)
            return DeadLetterOutput(sink: sink, format: format, maxInputBytes: maxInput)
        }

        _ = attempt { try root.finish() }
        guard errors.isEmpty, let source, let deadLetter else {
            throw ConfigErrors(Self.sorted(errors))
        }
        return Pipeline(source: source, stages: stages, sinks: sinks, deadLetter: deadLetter, settings: settings)
    }

    private func build<Component>(
        _ config: ConfigObject, kind: String, path: String, sinkNames: [String],
        table: [String: ComponentRegistry.Entry<@Sendable (ConfigObject, ComponentContext) throws -> Component>]
    ) throws -> Component {
        let known = table.keys.sorted()
        guard let typeNode = config.node("type") else {
            throw ConfigError("'\(path)' needs 'type' (one of: \(known.joined(separator: ", ")))", at: config.location)
        }
        guard case .scalar(let type) = typeNode.value else {
            throw ConfigError("'\(path).type' must be a string", at: typeNode.location)
        }
        guard let entry = table[type] else {
            throw ConfigError(
                "unknown \(kind) type '\(type)'; known: \(known.joined(separator: ", "))"
                    + ConfigObject.suggestion(for: type, among: known), at: typeNode.location)
        }
        let context = ComponentContext(path: path, sinkNames: sinkNames, logger: logger)
        do {
            let component = try entry.factory(config, context)
            try config.finish()
            return component
        } catch let error as ConfigError {
            throw error
        } catch {
            // A factory failed for a reason of its own (a certificate file that does not parse, ...).
            throw ConfigError("\(kind) '\(type)': \(error)", at: config.location)
        }
    }

    private static func sorted(_ errors: [ConfigError]) -> [ConfigError] {
        errors.sorted { ($0.location?.line ?? 0, $0.location?.column ?? 0) < ($1.location?.line ?? 0, $1.location?.column ?? 0) }
    }

    private static func settings(_ config: ConfigObject?) throws(ConfigError) -> PipelineSettings {
        var settings = PipelineSettings()
        guard let config else { return settings }
        settings.batchSize = try config.int("batch_size", default: settings.batchSize, in: 1...100_000)
        if let interval = try config.optionalDuration("progress_interval") {
            settings.progressInterval = interval == .zero ? nil : interval
        }
        settings.sinkRetryTimeout = try config.duration("sink_retry_timeout", default: settings.sinkRetryTimeout)
        settings.shutdownTimeout = try config.duration("shutdown_timeout", default: settings.shutdownTimeout)
        try config.finish()
        return settings
    }
}
