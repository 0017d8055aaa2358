import Foundation
import Signet
import SignetCore

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

    /// Checks `$SIGNET_DATA_DIR` when it is set and the pipeline keeps data there (the shipped
    /// ones do). Unset, the pipeline's own default applies and its components create it.
    func checkDataDirectory() throws {
        guard text.contains("SIGNET_DATA_DIR"), let path = Terminal.environment["SIGNET_DATA_DIR"] else { return }
        try DataDirectoryCheck.check(path)
    }
}

extension PipelineLoader {
    /// Builds `source` with `${VAR}` from the environment. A configuration error becomes
    /// ``ConfigurationFailure`` (exit 2).
    static func loadForCommand(_ source: PipelineSourceText) throws -> Pipeline {
        let loader = PipelineLoader(registry: Signet.makeRegistry(), environment: Terminal.environment)
        do {
            return try loader.load(yaml: source.text, file: source.name)
        } catch {
            throw ConfigurationFailure(description: error.description)
        }
    }

    /// The pipeline a command's `--pipeline` names, or the embedded default.
    static func loadForCommand(_ file: String?) throws -> Pipeline {
        try loadForCommand(PipelineSourceText(file))
    }
}
