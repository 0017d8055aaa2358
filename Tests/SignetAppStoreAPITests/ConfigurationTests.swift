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

    @Test("plain http only to loopback: the bearer token never crosses the network in clear")
    func plainHTTPOnlyToLoopback() throws {
        var (env, file) = try Self.environment()
        defer { try? FileManager.default.removeItem(at: file) }
        for url in ["http://127.0.0.1:8080", "http://localhost:9", "http://[::1]:8080", "http://127.1.2.3", "https://proxy.example.com"] {
            env["SIGNET_APPSTORE_API_URL"] = url
            #expect(throws: Never.self, "\(url)") { try AppStoreAPIConfiguration.fromEnvironment(env) }
        }
        for url in ["http://proxy.example.com", "http://10.0.0.1:8080", "http://127.0.0.1.example.com", "HTTP://api.storekit.apple.com"] {
            env["SIGNET_APPSTORE_API_URL"] = url
            let error = #expect(throws: AppStoreAPIConfigurationError.self, "\(url)") { try AppStoreAPIConfiguration.fromEnvironment(env) }
            #expect(error?.message.contains("plain http to another machine") == true, "\(url): \(error?.message ?? "")")
        }
    }

    @Test("rates above Apple's documented limit for the environment are refused, naming the limit")
    func appleLimits() throws {
        let (env, file) = try Self.environment()
        defer { try? FileManager.default.removeItem(at: file) }
        let credentials = try AppStoreAPIConfiguration.fromEnvironment(env).credentials
        #expect(throws: Never.self) { try AppStoreAPIConfiguration(credentials: credentials, environment: .production, requestsPerSecond: 50) }
        #expect(throws: Never.self) { try AppStoreAPIConfiguration(credentials: credentials, environment: .sandbox, requestsPerSecond: 5) }
        for (environment, rate, test, limit) in [
            (AppStoreEnvironment.production, 51.0, 1.0, "50"), (.sandbox, 6, 0.1, "5"), (.production, 40, 2, "1"), (.sandbox, 4, 0.5, "0.1"),
        ] {
            let error = #expect(throws: AppStoreAPIConfigurationError.self) {
                try AppStoreAPIConfiguration(
                    credentials: credentials, environment: environment, requestsPerSecond: rate, testNotificationRequestsPerSecond: test)
            }
            #expect(error?.message.contains("above Apple's limit of \(limit) per second per app in \(environment.rawValue)") == true, "\(error?.message ?? "")")
        }
    }

    @Test("an encrypted key is refused with a message saying so, never a password prompt")
    func encryptedKey() throws {
        for header in [
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAg=\n-----END ENCRYPTED PRIVATE KEY-----\n",
            "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00112233445566778899AABBCCDDEEFF\n\nAAAA\n-----END EC PRIVATE KEY-----\n",
        ] {
            let error = #expect(throws: AppStoreAPIConfigurationError.self) {
                try AppStoreAPICredentials(keyId: "K", issuerId: "I", bundleId: "B", privateKeyPEM: header)
            }
            #expect(error?.message.contains("encrypted") == true, "\(error?.message ?? "")")
        }
    }

    @Test("the commands' variables and a pipeline's keys are read by one function: the same checks, errors naming the setting as given")
    func oneReaderForBothSources() throws {
        let (env, file) = try Self.environment()
        defer { try? FileManager.default.removeItem(at: file) }
        var keys = [String: String](uniqueKeysWithValues: AppStoreAPIConfiguration.Setting.allCases.compactMap { setting in
            env[setting.variable].map { (setting.rawValue, $0) }
        })
        let fromKeys = try AppStoreAPIConfiguration.from({ keys[$0.rawValue] }, naming: { "'source.\($0.rawValue)'" })
        let fromVariables = try AppStoreAPIConfiguration.fromEnvironment(env)
        #expect(fromKeys.credentials.keyId == fromVariables.credentials.keyId && fromKeys.baseURL == fromVariables.baseURL)
        keys["issuer_id"] = " "
        let error = #expect(throws: AppStoreAPIConfigurationError.self) {
            try AppStoreAPIConfiguration.from({ keys[$0.rawValue] }, naming: { "'source.\($0.rawValue)'" })
        }
        #expect(error?.message == "'source.issuer_id' is not set (needed for the App Store Server API)", "\(error?.message ?? "")")
    }
}
