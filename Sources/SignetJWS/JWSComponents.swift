import AppStoreModels
import Foundation
import SignetCore
import SignetOpenSSL

/// Registers the `decode` and `verify` stages.
///
/// `verify` keys:
/// - `roots`: `apple` (the built-in Apple Root CA - G3, the default) and/or paths of PEM/DER files; a list or a comma-separated string.
/// - `environment` (required): `Production` or `Sandbox` (`Xcode`/`LocalTesting` only with private test roots).
/// - `bundle_id` (required), `app_apple_id` (required for Production).
/// - `workers`: threads for verification (default: all cores).
/// - `max_future_skew`: how far a signedDate may lie in the future (default 5m).
/// - `check_time`: `signedDate` (default: certificates judged at the payload's signedDate) or `currentTime`.
/// - `chain_cache_size`: verified certificate chains kept (default 256).
extension ComponentRegistry {
    public mutating func registerJWSComponents() {
        registerStage("decode", summary: "parses an input line and finds its signed JWS (signedPayload, signedTransaction, bare JWS)") { config, _ in
            DecodeStage(parallelism: try config.int("workers", default: 1, in: 1...256))
        }
        registerStage("verify", summary: "verifies ES256 signature, x5c chain to the roots, Apple OIDs, dates, claims, nested JWS") { config, _ in
            // 0 (the default) means every core.
            let configured = try config.int("workers", default: 0, in: 0...256)
            let workers = configured == 0 ? ProcessInfo.processInfo.activeProcessorCount : configured
            let configuration = try VerifierConfiguration(reading: config, requireClaims: true)
            do {
                return VerifyStage(verifier: try AppStoreVerifier(configuration: configuration), parallelism: workers)
            } catch let error as VerifierConfigurationError {
                throw config.error(error.message, key: "environment")
            }
        }
    }
}

extension VerifierConfiguration {
    /// Reads a verifier configuration from a stage's YAML settings.
    ///
    /// With `requireClaims`, `environment` and `bundle_id` must be present: a pipeline
    /// that grants entitlements must never accept another app's or environment's payloads.
    public init(reading config: ConfigObject, requireClaims: Bool) throws(ConfigError) {
        let roots: [X509Certificate]
        do {
            roots = try AppleRoots.load(try config.stringList("roots") ?? ["apple"])
        } catch let error as ConfigError {
            throw error
        } catch {
            throw config.error("\(error)", key: "roots")
        }
        let environment: AppStoreEnvironment? =
            requireClaims
            ? AppStoreEnvironment(rawValue: try config.choice("environment", ["Production", "Sandbox", "Xcode", "LocalTesting"]))
            : try config.optionalString("environment").map { AppStoreEnvironment(rawValue: $0) }
        let bundleId = requireClaims ? try config.string("bundle_id") : try config.optionalString("bundle_id")
        var appAppleId: Int64?
        if let text = try config.optionalString("app_apple_id") {
            guard let value = Int64(text), value > 0 else {
                throw config.error("'app_apple_id' must be a positive integer (the app's Apple ID), got '\(text)'", key: "app_apple_id")
            }
            appAppleId = value
        }
        if environment == .production, appAppleId == nil {
            throw config.error(
                "environment Production needs 'app_apple_id', the app's Apple ID (SIGNET_APP_APPLE_ID in the shipped pipelines)",
                key: config.contains("app_apple_id") ? "app_apple_id" : "environment")
        }
        self.init(roots: roots, environment: environment, bundleId: bundleId, appAppleId: appAppleId)
        if let skew = try config.optionalDuration("max_future_skew") { maxFutureSkew = skew }
        dateRule = VerificationDateRule(
            rawValue: try config.choice("check_time", VerificationDateRule.allCases.map(\.rawValue), default: dateRule.rawValue))!
        chainCacheCapacity = try config.int("chain_cache_size", default: chainCacheCapacity, in: 1...1_000_000)
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
