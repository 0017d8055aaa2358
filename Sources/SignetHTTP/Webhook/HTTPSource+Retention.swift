package import Logging
import SignetAppStorePipeline
package import SignetCore
import SignetJWS
import SignetState

extension HTTPSource {
    /// What serving a pipeline's `retention:` section takes, each part checked.
    private struct RetentionParts {
        var section: ParsedConfig
        var source: HTTPSource
        var verifier: AppStoreVerifier
        var policy: RetentionPolicy
        var store: StateStoreResource
    }

    /// Checks that the pipeline can serve its `retention:` section, if it has one: a
    /// ``ComponentRegistry`` pipeline check, so `signet lint` reports what `signet run` would
    /// refuse (at the section's line).
    package static func checkRetention(_ pipeline: Pipeline) throws(ConfigError) {
        _ = try retentionParts(pipeline)
    }

    /// Serves the pipeline's `retention:` section, if it has one, on its webhook listener:
    /// requests are verified by the pipeline's own `verify` stage's verifier (same roots,
    /// environments, bundle id and app Apple ID as its notifications) and decided from the
    /// section's store. Call it before the pipeline runs.
    ///
    /// Throws a ``ConfigError`` at the section when the pipeline cannot serve it (see
    /// ``checkRetention(_:)``) or a rule answers offers without the In-App Purchase key.
    package static func serveRetention(of pipeline: Pipeline, environment: [String: String], logger: Logger) throws {
        guard let parts = try retentionParts(pipeline) else { return }
        let signer = try RetentionPolicy.signer(parts.section, policy: parts.policy, env: environment)
        parts.source.serve(retention: RetentionResponder(
            policy: parts.policy, verifier: parts.verifier, resource: parts.store, signer: signer, logger: logger))
    }

    private static func retentionParts(_ pipeline: Pipeline) throws(ConfigError) -> RetentionParts? {
        guard let section = pipeline.sections[ComponentSpec.retentionSection.name] else { return nil }
        guard let source = pipeline.source as? HTTPSource else {
            throw section.error("'retention' is answered on the webhook's listener: it needs 'source: {type: http}'")
        }
        guard let verify = pipeline.stages.lazy.compactMap({ $0 as? VerifyStage }).first else {
            throw section.error("'retention' verifies Apple's requests as the pipeline's 'verify' stage does: the pipeline has none")
        }
        // Apple: never answer another app's request. It names its app by appAppleId alone (no
        // bundle id), so without one configured any app's signed request would be answered.
        guard verify.verifier.configuration.appAppleId != nil else {
            throw section.error(
                "'retention' needs the verify stage's app_apple_id (SIGNET_APP_APPLE_ID), in Sandbox too: a request names its app only by it, and another app's request must never be answered")
        }
        let policy = try RetentionPolicy(section)
        guard policy.path != source.options.path, policy.path != source.options.purchasesPath else {
            throw section.error("'retention.path' must differ from the source's path and purchases_path", key: "path")
        }
        let name = try section.string("store")
        guard let store = pipeline.resources.first(where: { $0.name == name })?.resource as? StateStoreResource else {
            throw section.error("'retention.store' names '\(name)', which is not a state store under stores:", key: "store")
        }
        return RetentionParts(section: section, source: source, verifier: verify.verifier, policy: policy, store: store)
    }
}
