package import Logging
import SignetAppStorePipeline
package import SignetCore
import SignetJWS
import SignetState

extension HTTPSource {
    /// Serves the pipeline's `retention:` section, if it has one, on its webhook listener:
    /// requests are verified by the pipeline's own `verify` stage's verifier (same roots,
    /// environments, bundle id and app Apple ID as its notifications) and decided from the
    /// section's store. Call it before the pipeline runs.
    ///
    /// Throws a ``ConfigError`` at the section when the pipeline cannot serve it: a source
    /// other than `http`, no `verify` stage, an unknown store, a rule that answers offers
    /// without the In-App Purchase key.
    package static func serveRetention(of pipeline: Pipeline, environment: [String: String], logger: Logger) throws {
        guard let section = pipeline.sections[ComponentSpec.retentionSection.name] else { return }
        guard let source = pipeline.source as? HTTPSource else {
            throw section.error("'retention' is answered on the webhook's listener: it needs 'source: {type: http}'")
        }
        guard let verify = pipeline.stages.lazy.compactMap({ $0 as? VerifyStage }).first else {
            throw section.error("'retention' verifies Apple's requests as the pipeline's 'verify' stage does: the pipeline has none")
        }
        let policy = try RetentionPolicy(section)
        guard policy.path != source.options.path, policy.path != source.options.purchasesPath else {
            throw section.error("'retention.path' must differ from the source's path and purchases_path", key: "path")
        }
        let name = try section.string("store")
        guard let store = pipeline.resources.first(where: { $0.name == name })?.resource as? StateStoreResource else {
            throw section.error("'retention.store' names '\(name)', which is not a state store under stores:", key: "store")
        }
        let signer = try RetentionPolicy.signer(section, policy: policy, env: environment)
        source.serve(retention: RetentionResponder(policy: policy, verifier: verify.verifier, resource: store, signer: signer, logger: logger))
    }
}
