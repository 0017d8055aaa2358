import Foundation
import SignetTestSupport
import Testing

/// Issue 56, checked from the outside: `Tests/Acceptance/retention_endpoint_acceptance.py`, written
/// from the documentation alone (docs/retention.md with Apple's rules and its "Signet" section,
/// docs/webhook.md, docs/pipelines.md), drives the built `signet` binary with Apple's signed Get
/// Retention Message requests (`signet fixtures`' realtime-requests.ndjson and realtime-refused.ndjson,
/// and requests re-signed with its test PKI) on the webhook's listener: the answer each rule calls for
/// from the purchase's stored state, the default message for unknown purchases and a slow or failing
/// store, consent withdrawn, offers signed V2 and V1, refusals with no answer (another app, forged,
/// malformed, the webhook's guards), 50 requests at once within Apple's 700 ms, the metrics by result
/// and reason, and the misconfigurations that stop `signet run` at start. It prints one `ok -` /
/// `FAIL -` line per check and exits 0 only when all pass.
@Suite(
    "Retention messages (issue 56): the acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct RetentionEndpointAcceptanceTests {
    @Test("verified requests get the first matching rule's answer or the default, refused ones no answer, quickly, counted by result and reason")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("retention_endpoint_acceptance.py")
    }
}
