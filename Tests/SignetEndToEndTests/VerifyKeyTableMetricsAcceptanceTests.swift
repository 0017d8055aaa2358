import Foundation
import SignetTestSupport
import Testing

/// verify's per-key ES256 table as an operator sees it: `Tests/Acceptance/verify_key_table_metrics_acceptance.py`,
/// written from the documentation alone (docs/verification.md "Speed", docs/operations.md's metrics, docs/webhook.md,
/// docs/pipelines.md, README.md, the commands' own `--help`), runs `signet run --pipeline Pipelines/webhook.yaml` on
/// `signet fixtures`' PKI with its store in a temporary directory, POSTs notifications as Apple does and scrapes
/// `/metrics` as Prometheus does. `signet_verifier_key_tables_total` is exposed, a counter without labels, at 0
/// before any notification; 1,120 notifications of self-made chains (a rogue root and intermediate with Apple's
/// marker OIDs, a self-issued leaf with the real intermediate and root, the trusted leaf's own key under the rogue
/// root), 280 per key on 4 connections, are all `invalid_certificate_chain` and leave it at 0; the trusted leaf's
/// notifications one at a time (every 8th sent again: a duplicate) keep it at 0 while at most 255 of its JWS could
/// have been verified and make it exactly 1 once 300 surely were; a second leaf under the fixtures' intermediate
/// (Apple rotating its key), its 256th JWS among concurrent requests, makes it exactly 2; forged lines (bits flipped
/// in r or s, r = 0, s = n, a verification point at infinity, altered payloads, another key's signature under the
/// leaf's x5c, one leaf's x5c with another's signature, forged nested signedTransactionInfo / signedRenewalInfo,
/// self-made chains, the fixtures' forged.ndjson, a malleated valid signature) get the same HTTP status and body at
/// the start, after each table and after a restart, and the same dead letter (reason, detail, stage, id). After a
/// restart on the same store the counter is 0 again; already committed notifications are duplicates yet verified
/// (they count), the notification carrying the 256th signature makes it 1, and 300 fresh signatures keep it at
/// exactly 1; SIGTERM exits 0 both times.
@Suite(
    "verify's key table on /metrics: the acceptance script against the webhook",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct VerifyKeyTableMetricsAcceptanceTests {
    @Test("signet_verifier_key_tables_total counts one table per trusted leaf and process, never for self-made chains, and verdicts stay the same, as docs/verification.md and docs/operations.md promise")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("verify_key_table_metrics_acceptance.py")
    }
}
