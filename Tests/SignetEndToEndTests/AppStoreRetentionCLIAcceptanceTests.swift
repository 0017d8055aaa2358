import Foundation
import SignetTestSupport
import Testing

/// Issue 56, item 4, checked from the outside: `Tests/Acceptance/appstore_retention_cli_acceptance.py`,
/// written from the documentation alone (docs/retention.md §3–§7 and "Configuring Apple",
/// docs/appstore-api.md), drives `signet appstore retention ...` against its own strict fake of
/// Apple (the JWT checked as Apple does, every documented rule and error), and plays Apple's
/// performance test for real against `signet run`'s retention endpoint: every subcommand's output
/// and exit status, identifiers sent lower-case, requests Apple's rules refuse never sent, Apple's
/// refusals with their codes, 429 and 500 retried, Production's URL accepted only after a PASS.
@Suite(
    "signet appstore retention (issue 56): the acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct AppStoreRetentionCLIAcceptanceTests {
    @Test("the configuration calls and the performance test, as the docs promise, against a strict fake Apple")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("appstore_retention_cli_acceptance.py")
    }
}
