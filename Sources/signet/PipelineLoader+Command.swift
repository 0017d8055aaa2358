import Foundation
import Signet
import SignetCore
import SignetJWS

/// A pipeline file's text and the name messages give it.
struct PipelineSourceText {
    var text: String
    var name: String

    /// The file a command's `--pipeline` names, or the embedded default (Pipelines/stdin.yaml).
    init(_ file: String?) throws {
        guard let file else {
            self.init(text: Signet.defaultPipelineYAML, name: Signet.defaultPipelineName)
            return
        }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigurationFailure(description: "signet: cannot read the pipeline file '\(file)'")
        }
        self.init(text: String(decoding: data, as: UTF8.self), name: file)
    }

    init(text: String, name: String) {
        self.text = text
        self.name = name
    }

    /// A warning for an operator who set `$SIGNET_ROOT_CERTS` (as `source fixtures.env` does)
    /// for a pipeline whose `verify` does not read it: such a stage trusts only what its own
    /// `roots:` says (Apple's root when it says nothing), so every notification signed under
    /// the roots in the variable is rejected. Earlier versions read the variable without
    /// `roots:`; a file written then rejects every fixture with no word of why. nil when the
    /// variable is unset, the pipeline has no verify stage, or the file names the variable.
    func unreadRootCertificatesWarning(for pipeline: Pipeline) -> String? {
        guard let roots = Terminal.environment["SIGNET_ROOT_CERTS"], !roots.isEmpty,
            pipeline.stages.contains(where: { $0 is VerifyStage }), !text.contains("SIGNET_ROOT_CERTS")
        else { return nil }
        return "warning: SIGNET_ROOT_CERTS is set (\(roots)), but no verify stage of \(name) reads it: verify trusts only its own roots: (Apple Root CA - G3 when it has none). Write `roots: ${SIGNET_ROOT_CERTS:apple}` in the verify stage to trust these roots, or unset the variable."
    }

    /// Checks `$SIGNET_DATA_DIR` when it is set and the pipeline keeps data there (the shipped
    /// ones do). Unset, the pipeline's own default applies and its components create it.
    func checkDataDirectory() throws {
        guard text.contains("SIGNET_DATA_DIR"), let path = Terminal.environment["SIGNET_DATA_DIR"] else { return }
        try DataDirectoryCheck.check(path)
    }
}

extension PipelineLoader {
    /// Builds `source` with `${VAR}` from the environment, saying loudly when
    /// `$SIGNET_ROOT_CERTS` is set but no verify stage reads it. A configuration error becomes
    /// ``ConfigurationFailure`` (exit 2).
    static func loadForCommand(_ source: PipelineSourceText) throws -> Pipeline {
        let loader = PipelineLoader(registry: Signet.makeRegistry(), environment: Terminal.environment)
        let pipeline: Pipeline
        do {
            pipeline = try loader.load(yaml: source.text, file: source.name)
        } catch {
            throw ConfigurationFailure(description: error.description)
        }
        if let warning = source.unreadRootCertificatesWarning(for: pipeline) { Terminal.error(warning) }
        return pipeline
    }

    /// The pipeline a command's `--pipeline` names, or the embedded default.
    static func loadForCommand(_ file: String?) throws -> Pipeline {
        try loadForCommand(PipelineSourceText(file))
    }
}
