import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetOpenSSL
import Testing

@Suite("App Store Server API configuration from the environment")
struct ConfigurationTests {
    /// A complete environment with a real .p8-like file; removed by the caller.
    static func environment(key: ECPrivateKey? = nil) throws -> (env: [String: String], keyFile: URL) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("signet-\(UUID().uuidString).p8")
        try (key ?? ECPrivateKey(generating: .p256)).pemEncoded.write(to: file, atomically: true, encoding: .utf8)
        return ([
            "SIGNET_APPSTORE_KEY_ID": "KEY123ABCD", "SIGNET_APPSTORE_ISSUER_ID": "issuer-uuid",
            "SIGNET_APPSTORE_PRIVATE_KEY": file.path, "SIGNET_BUNDLE_ID": "com.example.signet",
        ], file)
    }

    @Test("defaults: Sandbox, Apple's Sandbox host, 4 req/s and 0.1 req/s; Production: 40 and 1")
    func defaults() throws {
        let (env, file) = try Self.environment()
        defer { try? FileManager.default.removeItem(at: file) }
        let sandbox = try AppStoreAPIConfiguration.fromEnvironment(env)
        #expect(sandbox.environment == .sandbox)
        #expect(sandbox.baseURL == "https://api.storekit-sandbox.apple.com")
        #expect(sandbox.requestsPerSecond == 4)
        #expect(abs(sandbox.testNotificationRequestsPerSecond - 0.1) < 1e-9)
        #expect(sandbox.notificationHistoryLookback == .seconds(30 * 86_400))
        #expect(sandbox.credentials.keyId == "KEY123ABCD")

        var production = env
        production["SIGNET_ENVIRONMENT"] = "Production"
        production["SIGNET_APPSTORE_API_URL"] = "http://127.0.0.1:8089/"
        let configuration = try AppStoreAPIConfiguration.fromEnvironment(production)
        #expect(configuration.environment == .production)
        #expect(configuration.baseURL == "http://127.0.0.1:8089")
        #expect(configuration.sandboxFallbackURL == "https://api.storekit-sandbox.apple.com")
        #expect(configuration.requestsPerSecond == 40)
        #expect(configuration.testNotificationRequestsPerSecond == 1)
        #expect(configuration.notificationHistoryLookback == .seconds(180 * 86_400))
        production["SIGNET_APPSTORE_API_URL"] = nil
        #expect(try AppStoreAPIConfiguration.fromEnvironment(production).baseURL == "https://api.storekit.apple.com")
    }

    @Test("each missing or invalid variable is named in the error", arguments: [
        ("SIGNET_APPSTORE_KEY_ID", nil, "SIGNET_APPSTORE_KEY_ID is not set"),
        ("SIGNET_APPSTORE_ISSUER_ID", "", "SIGNET_APPSTORE_ISSUER_ID is not set"),
        ("SIGNET_APPSTORE_PRIVATE_KEY", nil, "SIGNET_APPSTORE_PRIVATE_KEY is not set"),
        ("SIGNET_BUNDLE_ID", nil, "SIGNET_BUNDLE_ID is not set"),
        ("SIGNET_APPSTORE_PRIVATE_KEY", "/nonexistent/AuthKey.p8", "SIGNET_APPSTORE_PRIVATE_KEY: cannot read"),
        ("SIGNET_ENVIRONMENT", "production", "SIGNET_ENVIRONMENT must be Sandbox or Production"),
        ("SIGNET_APPSTORE_API_URL", "ftp://example.com", "SIGNET_APPSTORE_API_URL:"),
    ] as [(String, String?, String)])
    func namedErrors(variable: String, value: String?, expected: String) throws {
        var (env, file) = try Self.environment()
        defer { try? FileManager.default.removeItem(at: file) }
        env[variable] = value
        let error = #expect(throws: AppStoreAPIConfigurationError.self) { try AppStoreAPIConfiguration.fromEnvironment(env) }
        #expect(error?.message.hasPrefix(expected) == true, "\(error?.message ?? "no error")")
    }

    @Test("a P-384 key file is refused, naming the variable and P-256")
    func wrongCurve() throws {
        let (env, file) = try Self.environment(key: try ECPrivateKey(generating: .p384))
        defer { try? FileManager.default.removeItem(at: file) }
        let error = #expect(throws: AppStoreAPIConfigurationError.self) { try AppStoreAPIConfiguration.fromEnvironment(env) }
        #expect(error?.message.hasPrefix("SIGNET_APPSTORE_PRIVATE_KEY") == true)
        #expect(error?.message.contains("not P-256") == true)
    }
}
