import AppStoreModels
import Foundation
public import SignetCore
public import SignetOpenSSL

/// Registers the `decode` and `verify` stages (keys: `ComponentSpec/decodeStage`,
/// `ComponentSpec/verifyStage`).
extension ComponentRegistry {
    /// - Parameter ocspTransport: makes how `verify`'s `revocation:` policy reaches OCSP
    ///   responders, called when the first verify stage with a mode other than `off` is built
    ///   (so `off` makes no HTTP client). Given by whoever links an HTTP client
    ///   (`Signet.makeRegistry()` passes SignetHTTP's `AsyncHTTPClientOCSPTransport`): SignetJWS
    ///   has none of its own. Without it, a pipeline asking for `revocation.mode` soft or hard
    ///   does not load. Every verify stage this registry builds shares one checker (one cache)
    ///   per deadline.
    public mutating func registerJWSComponents(ocspTransport: (@Sendable () -> any OCSPTransport)? = nil) {
        let metrics = RevocationMetrics()
        let checkers = ocspTransport.map { RevocationCheckers(makeTransport: $0, metrics: metrics) }
        registerStage(.decodeStage) { config, _ in
            DecodeStage(options: try DecodeStage.Options.configuration.options(config))
        }
        registerStage(.verifyStage) { config, context in
            // 0 (the default) means every core.
            let configured = try config.int("workers")
            let workers = configured == 0 ? ProcessInfo.processInfo.activeProcessorCount : configured
            let configuration = try VerifierConfiguration(reading: config)
            let revocation = try config.object("revocation")
            let policy = try revocation.map { revocation throws(ConfigError) in
                try RevocationPolicy.configuration.options(revocation)
            } ?? RevocationPolicy()
            // Only soft mode's grace needs the last good answers after a restart.
            let answersFile: String? = if policy.mode == .soft {
                try revocation?.optionalString("answers_file")
                    ?? DataDirectory.file("revocation-answers.json", environment: context.environment)
            } else {
                nil
            }
            var gate: RevocationGate?
            if policy.mode != .off {
                guard let checkers else {
                    throw config.error(
                        "revocation.mode \(policy.mode.rawValue) needs an OCSP transport, which this registry was not given "
                            + "(registerJWSComponents(ocspTransport:); Signet.makeRegistry() gives one)", key: "revocation")
                }
                gate = RevocationGate(
                    policy: policy, checker: checkers.checker(deadline: policy.deadline, answersFile: answersFile?.isEmpty == false ? answersFile : nil),
                    metrics: metrics, logger: context.logger)
            }
            do {
                // A document a later stage replaces (`transition`'s events) is never published: not built.
                return VerifyStage(
                    verifier: try AppStoreVerifier(configuration: configuration), parallelism: workers,
                    emitsDocument: !context.laterStage(declares: .replacesOutputs), logger: context.logger,
                    monitor: VerificationMonitor(logger: context.logger), revocation: gate)
            } catch let error as VerifierConfigurationError {
                throw config.error(error.message, key: "environment")
            }
        }
    }
}

extension VerifierConfiguration {
    /// Reads a verifier configuration from a validated `verify` stage mapping
    /// (`ComponentSpec/verifyStage`): environment and bundle id are always required, so
    /// a pipeline that grants entitlements never accepts another app's or environment's payloads.
    public init(reading config: ParsedConfig) throws(ConfigError) {
        let roots: [X509Certificate]
        do {
            roots = try AppleRoots.load(try config.stringList("roots") ?? ["apple"])
        } catch {
            throw config.error("\(error)", key: "roots")
        }
        let environments = Set((try config.stringList("environment") ?? []).map(AppStoreEnvironment.init(rawValue:)))
        guard !environments.isEmpty else { throw config.error("'environment' names no environment", key: "environment") }
        let appAppleId = try config.optionalInt("app_apple_id").map(Int64.init)
        if environments.contains(.production), appAppleId == nil {
            throw config.error(
                "environment Production needs 'app_apple_id', the app's Apple ID (SIGNET_APP_APPLE_ID in the shipped pipelines)",
                key: "environment")
        }
        self.init(roots: roots, environments: environments, bundleId: try config.string("bundle_id"), appAppleId: appAppleId)
        try Self.configuration.apply(config, to: &self)
    }
}

extension AppleRoots {
    /// Loads trust anchors from specs: `apple` (or `builtin`) for the built-in Apple Root CA
    /// - G3, anything else a PEM or DER file. The pipeline's `roots:` and `signet verify --root`
    /// both go through here.
    public static func load(_ specs: [String]) throws(RootLoadingError) -> [X509Certificate] {
        var roots: [X509Certificate] = []
        for spec in specs {
            if spec == "apple" || spec == "builtin" {
                roots.append(appleRootCAG3)
                continue
            }
            let loaded: [X509Certificate]
            do {
                loaded = try X509Certificate.loadAll(fromFile: spec)
            } catch {
                throw RootLoadingError(description: "cannot load root certificates from '\(spec)': \(error)")
            }
            guard !loaded.isEmpty else { throw RootLoadingError(description: "no certificate in root file '\(spec)'") }
            roots.append(contentsOf: loaded)
        }
        return roots
    }
}

/// A roots file that cannot be used, with the path and the reason.
public struct RootLoadingError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// `check_time` reads it by its raw value (here, where SignetCore is imported publicly, as a
/// public type's conformance needs).
extension VerificationDateRule: ConfigBindable {}
