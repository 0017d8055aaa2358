public import Foundation
public import Logging

/// Turns a pipeline file into a ``Pipeline`` using a ``ComponentRegistry``.
///
/// The file has these top-level keys:
///
/// ```yaml
/// source:      { type: stdin, ... }          # exactly one
/// stages:      [ { type: decode }, ... ]      # in order
/// sinks:       { name: { type: stdout }, ... }
/// dead_letter: { type: file, path: ..., format: json }
/// stores:      { name: { type: sqlite, path: ... }, ... }   # optional; `default` is implicit
/// settings:    { batch_size: 256, progress_interval: 10s, ... }
/// # plus any section registered with ComponentRegistry.registerSection
/// ```
///
/// Every problem is reported with its file, line and column; the loader keeps going
/// past a broken component so `signet lint` shows all of them at once.
public struct PipelineLoader: Sendable {
    /// The component types a file may name.
    public var registry: ComponentRegistry
    /// What `${VAR}` and `${VAR:default}` expand to (the process's environment by default).
    public var environment: [String: String]
    /// Where components built by the factories log.
    public var logger: Logger
    /// Builds each store whose spec names a ``ComponentSpec/testSubstitute`` as that type
    /// instead (`signet test`: in-memory state, no files, no servers).
    package var substitutesTestStores = false

    /// A loader building from `registry`'s types, expanding variables from `environment`.
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
        /// Every error found, each with its line and column; empty when the file is valid.
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
        let rootNode: ConfigNode
        do {
            rootNode = try ConfigNode.parse(yaml: text, file: file, interpolator: interpolator)
        } catch {
            throw ConfigErrors([error])
        }
        var build = PipelineBuild(loader: self, root: rootNode)
        return try build.run()
    }

    package static func sorted(_ errors: [ConfigError]) -> [ConfigError] {
        errors.sorted { ($0.location?.line ?? 0, $0.location?.column ?? 0) < ($1.location?.line ?? 0, $1.location?.column ?? 0) }
    }
}
