import Foundation
import SignetTestSupport
import Testing

/// Issue 56, item 5, checked from the outside: `Tests/Acceptance/offer_signature_api_acceptance.py`,
/// written from the documentation alone (docs/offers.md "Signing for the app", docs/operations.md),
/// drives `POST /v1/offers/signature` of the `signet run` binary over purchases in every state
/// loaded through its webhook: each offer signed exactly when the rules say (else the reason),
/// every signature verified with Python's `cryptography` against Apple's documented fields,
/// upper-case tokens, retries, malformed requests, the token, the size limit, no key.
@Suite(
    "Offer signatures for the app (issue 56): the acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct OfferSignatureAPIAcceptanceTests {
    @Test("offers signed only for eligible customers, verified independently, refusals with their reasons")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("offer_signature_api_acceptance.py")
    }
}
