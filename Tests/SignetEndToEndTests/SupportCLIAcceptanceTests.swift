import Foundation
import SignetTestSupport
import Testing

/// `signet support ...` checked from the outside: `Tests/Acceptance/support_cli_acceptance.py`, written
/// from the documentation alone (docs/support.md, docs/appstore-api.md, README.md, the commands' own
/// `--help`), drives the binary against its own strict fake of Apple's App Store Server API (the JWT
/// checked as Apple does; Look Up Order ID, Get Refund History, Extend a Subscription Renewal Date, the
/// mass extension and its status, Set App Account Token, Get App Transaction Info, with Apple's rules and
/// error codes) serving transactions signed with `signet fixtures`' test PKI, beside a state store filled
/// by `signet run`: each subcommand's output and exit status, `signetState`, requests Apple's rules
/// refuse never sent, Apple's refusals explained, resending with the same request id extending once,
/// identifiers sent lower-case, --wait polling within the mass endpoint's 1 request a second, forged
/// answers refused.
@Suite(
    "signet support: the acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct SupportCLIAcceptanceTests {
    @Test("the customer-support calls, as docs/support.md promises, against a strict fake Apple")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("support_cli_acceptance.py")
    }
}
