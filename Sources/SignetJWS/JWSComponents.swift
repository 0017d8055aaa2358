import AppStoreModels
import Foundation
public import SignetCore
public import SignetOpenSSL

/// Registers the `decode` and `verify` stages (keys: ``ComponentSpec/decodeStage``,
/// ``ComponentSpec/verifyStage``).
extension ComponentRegistry {
    public mutating func registerJWSComponents() {
        registerStage(.decodeStage) { config, _ in
            DecodeStage(parallelism: try config.int("workers"))
        }
        registerStage(.verifyStage) { config, context in
            // 0 (the default) means every core.
            let configured = try config.int("workers")
            let workers = configured == 0 ? ProcessInfo.processInfo.activeProcessorCount : configured
            let configuration = try VerifierConfiguration(reading: config)
            do {
                // A document a later stage replaces (`transition`'s events) is never published: not built.
                return VerifyStage(
                    verifier: try AppStoreVerifier(configuration: configuration), parallelism: workers,
                    emitsDocument: !context.laterStage(declares: .replacesOutputs), logger: context.logger,
                    monitor: VerificationMonitor(logger: context.logger))
            } catch let error as VerifierConfigurationError {
                throw config.error(error.message, key: "environment")
            }
        }
    }
}

extension VerifierConfiguration {
    /// Reads a verifier configuration from a validated `verify` stage mapping
    /// (``ComponentSpec/verifyStage``): environment and bundle id are always required, so
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
