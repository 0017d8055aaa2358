import Signet
import SignetCore

extension PipelineLoader {
    /// The pipeline a command's `--pipeline` names, or the embedded default
    /// (Pipelines/stdin.yaml), with `${VAR}` from the environment. A configuration error
    /// becomes ``ConfigurationFailure`` (exit 2).
    static func loadForCommand(_ file: String?) throws -> Pipeline {
        let loader = PipelineLoader(registry: Signet.makeRegistry(), environment: Terminal.environment)
        do {
            if let file { return try loader.load(file: file) }
            return try loader.load(yaml: Signet.defaultPipelineYAML, file: Signet.defaultPipelineName)
        } catch {
            throw ConfigurationFailure(description: error.description)
        }
    }
}
