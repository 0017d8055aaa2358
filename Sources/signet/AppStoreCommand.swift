import AppStoreModels
import ArgumentParser
import Foundation
import Logging
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetCore

/// `signet appstore ...`: checks against the App Store Server API.
struct AppStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore",
        abstract: "Talks to the App Store Server API (the key's variables: `signet help backfill`).",
        subcommands: [TestNotificationCommand.self, DeliveryHealthCommand.self, AppStoreRetentionCommand.self])
}

/// `signet appstore test-notification`: asks Apple to send a TEST notification to the app's
/// webhook and reports Apple's delivery attempts, so an operator sees whether Apple reaches it.
struct TestNotificationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-notification",
        abstract: "Asks Apple for a TEST notification and prints its delivery attempts to the webhook.",
        discussion: """
            Calls Request a Test Notification: Apple sends a TEST notification to the App Store Server Notifications V2 URL configured for the app in App Store Connect (App Information) for SIGNET_ENVIRONMENT. Then it polls Get Test Notification Status and prints each send attempt (date and result: SUCCESS, TIMED_OUT, NO_RESPONSE, ...) as it appears, until one succeeds or --timeout passes.

            Exit status: 0 when Apple delivered it (an attempt answered SUCCESS), 1 when no attempt succeeded in time, 2 for a configuration problem. It needs the same variables as `signet backfill` (SIGNET_APPSTORE_KEY_ID, SIGNET_APPSTORE_ISSUER_ID, SIGNET_APPSTORE_PRIVATE_KEY, SIGNET_BUNDLE_ID, SIGNET_ENVIRONMENT). Apple allows one such request a second in Production and fewer in Sandbox, so a Sandbox check takes tens of seconds.

            Example:
              SIGNET_ENVIRONMENT=Production signet appstore test-notification --timeout 2m
            """)

    @Option(name: .long, help: "How long to wait for a successful attempt (e.g. 90s, 5m).")
    var timeout: String = "2m"

    @Option(name: .long, help: "How often to ask for the status (e.g. 2s).")
    var interval: String = "2s"

    func validate() throws {
        for (name, value) in [("--timeout", timeout), ("--interval", interval)] where (try? ConfigDuration.parse(value).get()) == nil {
            throw ValidationError("\(name) '\(value)' is not a duration such as 2s or 5m")
        }
    }

    func run() async throws {
        Terminal.bootstrapLogging(level: .warning)
        let configuration: AppStoreAPIConfiguration
        do {
            configuration = try AppStoreAPIConfiguration.fromEnvironment(Terminal.environment)
        } catch {
            throw ConfigurationFailure(description: "signet appstore test-notification: \(error.message) (see `signet help backfill`)")
        }
        let client = AppStoreServerAPIClient(configuration: configuration)
        let delivered: Bool
        do {
            delivered = try await check(client)
        } catch {
            try? await client.shutdown()
            Terminal.error("test notification failed: \(error)")
            throw ExitCode.failure
        }
        try await client.shutdown()
        if !delivered { throw ExitCode.failure }
    }

    /// Requests the notification and polls its status; true once an attempt succeeded.
    private func check(_ client: AppStoreServerAPIClient) async throws -> Bool {
        let deadline = ContinuousClock.now + ((try? ConfigDuration.parse(timeout).get()) ?? .seconds(120))
        let pause = (try? ConfigDuration.parse(interval).get()) ?? .seconds(2)
        let token = try await client.requestTestNotification().testNotificationToken
        Terminal.note("requested a TEST notification from \(client.configuration.baseURL) (token \(token)); waiting for Apple's send attempts")
        var printed = 0
        while true {
            do {
                let status = try await client.testNotificationStatus(token: token)
                for attempt in status.sendAttempts.dropFirst(printed) {
                    let date = attempt.attemptDate.map(AppStoreHistoryWindow.iso) ?? "unknown time"
                    try Terminal.printLine(Array("attempt \(printed + 1) at \(date): \(attempt.sendAttemptResult ?? "unknown")".utf8))
                    printed += 1
                }
                if status.sendAttempts.contains(where: { $0.sendAttemptResult == "SUCCESS" }) {
                    Terminal.note("Apple delivered the TEST notification to the app's webhook")
                    return true
                }
            } catch let error as AppStoreAPIError where error.isTestNotificationNotFound {
                // Test notification not found: Apple has not recorded it yet.
            }
            guard ContinuousClock.now + pause < deadline else {
                Terminal.error(
                    printed == 0
                        ? "Apple made no send attempt within \(timeout): check the App Store Server Notifications URL in App Store Connect"
                        : "no send attempt succeeded within \(timeout): is the webhook reachable from the internet and answering 200?")
                return false
            }
            try await Task.sleep(for: pause)
        }
    }
}

/// `signet appstore health`: the last delivery round trips the `appstore_delivery_health`
/// stage made, and what Apple said about each.
struct DeliveryHealthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Prints the last TEST notification round trips of a running pipeline and Apple's send attempts.",
        discussion: """
            The `appstore_delivery_health` stage asks Apple for a TEST notification every interval and checks it comes back through the webhook; it keeps the last round trips in its state_file (default $SIGNET_DATA_DIR/delivery-health.json), which this command prints, oldest first: when, the result, how long the notification took, Apple's send attempts (SUCCESS, TIMED_OUT, NO_RESPONSE, SSL_ISSUE, ...) and, for a failure, what to check.

            Exit status: 0 when the newest round trip succeeded, 1 when it failed, 2 when there is no record (the stage is not in the pipeline, or has not run yet).

            Example:
              signet appstore health --last 5
            """)

    @Option(help: "The stage's state_file. Default: $SIGNET_DATA_DIR/delivery-health.json (SIGNET_DATA_DIR: signet-data).")
    var stateFile: String?

    @Option(help: "How many of the newest round trips to print.")
    var last: Int = 10

    @Flag(help: "Print the round trips as JSON.")
    var json = false

    func validate() throws {
        guard last > 0 else { throw ValidationError("--last must be positive") }
    }

    func run() throws {
        let path = stateFile ?? DataDirectory.file("delivery-health.json", environment: Terminal.environment)
        let trips: [DeliveryRoundTrip]
        do {
            trips = Array(try DeliveryHealthFile.read(path).suffix(last))
        } catch {
            throw ConfigurationFailure(description: "signet appstore health: \(path) cannot be read: \(error)")
        }
        guard let newest = trips.last else {
            throw ConfigurationFailure(
                description: "signet appstore health: no round trip recorded in \(path) (is `appstore_delivery_health` in the pipeline, and has it run?)")
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            try Terminal.printLine(Array(try encoder.encode(trips)))
        } else {
            for trip in trips { try Terminal.printLine(Array(Self.line(trip).utf8)) }
        }
        if newest.result != .success { throw ExitCode.failure }
    }

    static func line(_ trip: DeliveryRoundTrip) -> String {
        let when = AppStoreHistoryWindow.iso(trip.requestedAt)
        let attempts = trip.attempts.isEmpty ? "no send attempt" : "attempts: " + trip.attempts.map { $0.result ?? "?" }.joined(separator: ", ")
        switch trip.result {
        case .success:
            return "\(when)  ok       back in \(String(format: "%.1f", Double(trip.latency ?? 0) / 1000)) s; \(attempts)"
        default:
            return "\(when)  FAILED   \(attempts); \(trip.detail ?? "")"
        }
    }
}
