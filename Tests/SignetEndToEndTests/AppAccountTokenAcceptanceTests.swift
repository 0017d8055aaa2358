import Foundation
import SignetTestSupport
import Testing

/// Issue 53 (items 1 and 2), checked from the outside: `Tests/Acceptance/app_account_token_acceptance.py`,
/// written from the documentation alone, drives the built `signet` binary (the consent ledger
/// through the CLI and the HTTP API, `signet entitlements`, `GET /v1/entitlements`, the events,
/// and the refund-question responder against a fake App Store Server API) with appAccountTokens
/// as clients send them: upper case (Swift's `uuidString`), mixed case, retries, and values that
/// are not UUIDs. It prints one `ok -` / `FAIL -` line per check and exits 0 only when all pass.
@Suite(
    "appAccountToken is a UUID at every boundary (issue 53): the acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct AppAccountTokenAcceptanceTests {
    @Test("any case finds the same customer, non-UUIDs are refused, a consent before the first run is kept, a withdrawal in UPPER case stops the answer to Apple")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("app_account_token_acceptance.py")
    }
}
