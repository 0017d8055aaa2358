import ArgumentParser
import Foundation
import Signet

/// `signet`: the command-line shell over the Signet library.
@main
struct SignetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signet",
        abstract: "Turns Apple's signed App Store Server Notifications V2 into verified entitlement-change events.",
        discussion: """
            Signet reads notifications (NDJSON on stdin, files, or a Kafka topic), verifies each JWS (ES256, x5c chain to Apple Root CA - G3, Apple's marker OIDs, validity at signedDate, environment/bundle/app claims, nested transaction and renewal info), drops retries, tracks every subscription's state, and publishes what changed.

            First steps:
              signet fixtures --out demo --now     # a test PKI and signed samples
              source demo/fixtures.env             # SIGNET_ROOT_CERTS, SIGNET_BUNDLE_ID, ...
              signet run < demo/notifications.ndjson   # the embedded stdin pipeline
              signet verify demo/notifications.ndjson  # the same SIGNET_* settings

            Exit codes: 0 success, 1 rejected input (verify) or a failed run, 2 usage or configuration error.
            """,
        version: BuildInfo.versionLine,
        subcommands: [
            RunCommand.self, LintCommand.self, VerifyCommand.self, DecodeCommand.self, FixturesCommand.self,
            StateCommand.self, EntitlementsCommand.self, ConsentCommand.self, ConsumptionCommand.self, RetentionCommand.self, ExpireCommand.self, DevBrokerCommand.self, ComponentsCommand.self, TestCommand.self, TopCommand.self,
            MigrateCommand.self, BackfillCommand.self, ReconcileCommand.self, AppStoreCommand.self, SupportCommand.self, ConsoleCommand.self, OffersCommand.self, DeadLettersCommand.self,
        ]
    )

    /// Maps ArgumentParser's usage errors (64) to 2, the code the docs promise.
    static func main() async {
        MallocTuning.apply()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if error is StdoutClosed {
                // The reader stopped reading (`| head`): exit quietly, as SIGPIPE would.
                Foundation.exit(141)
            }
            let code = exitCode(for: error)
            if let failure = error as? ConfigurationFailure {
                FileHandle.standardError.write(Data((failure.description + "\n").utf8))
                Foundation.exit(2)
            }
            if code == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\nRun 'signet help' for usage.\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// A configuration problem already explained on stderr; exits with 2.
struct ConfigurationFailure: Error, CustomStringConvertible {
    var description: String
}
