import ArgumentParser
import Logging
import SignetAppStoreAPI
import SignetJWS

/// A request the client refused before sending it, as Apple's documented rules would
/// (``RetentionMessagingError``, ``SupportCallError``): exit 2, "not sent".
protocol NotSentError: Error, CustomStringConvertible {}

extension RetentionMessagingError: NotSentError {}
extension SupportCallError: NotSentError {}

/// How the commands that call the App Store Server API by hand (`signet appstore retention`,
/// `signet support`) run one: a client from the environment, and every failure turned into
/// their shared exit status (0 done; 1 Apple refused, was not reached, or answered something
/// that does not verify; 2 not sent, or a configuration problem).
enum AppStoreCall {
    /// Runs `body` with a client; `name` prefixes messages (`signet support extend`) and
    /// `explanation` says what to do about the Apple error codes an operator meets.
    static func withClient(
        _ name: String, explanation: (AppStoreAPIError) -> String?, _ body: (AppStoreServerAPIClient) async throws -> Void
    ) async throws {
        Terminal.bootstrapLogging(level: .warning)
        let configuration: AppStoreAPIConfiguration
        do {
            configuration = try AppStoreAPIConfiguration.fromEnvironment(Terminal.environment)
        } catch {
            throw ConfigurationFailure(description: "\(name): \(error.message) (see `signet help backfill`)")
        }
        let client = AppStoreServerAPIClient(configuration: configuration)
        do {
            try await body(client)
            try await client.shutdown()
        } catch let refused as any NotSentError {
            try? await client.shutdown()
            throw ConfigurationFailure(description: "\(name): not sent: \(refused)")
        } catch let failure as AppStoreAPIError {
            try? await client.shutdown()
            Terminal.error("\(name): \(failure)\(explanation(failure).map { "\n  \($0)" } ?? "")")
            throw ExitCode.failure
        } catch let rejection as RecordRejection {
            try? await client.shutdown()
            Terminal.error("\(name): Apple's answer did not verify (\(rejection.reason.rawValue): \(rejection.detail)); nothing shown")
            throw ExitCode.failure
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
