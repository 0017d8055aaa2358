import Foundation
import SignetTestSupport
import Testing

/// Issue 53 (the purchase path, `signet verify --revocation`, `signet fixtures`), checked from the
/// outside: `Tests/Acceptance/purchase_revocation_fixtures_acceptance.py`, written from the
/// documentation alone, drives the built `signet` binary: the webhook pipeline's purchase path with
/// another app's transactions relayed by a backend (distinct ones, a relay loop posting the same one
/// over a keep-alive connection, retries), against Apple's path where 20 of another app's
/// notifications in a row do make the instance unready; notifications and renewal info posted as a
/// transaction, bodies that are no JSON object; `signet verify --revocation off|soft|hard` against
/// real `openssl ocsp` responders (and CRLs) serving the fixtures' PKI, revoked, good, silent and
/// down; and the fixtures' leaf serial and certificates across calls into one folder. It prints one
/// `ok -` / `FAIL -` line per check and exits 0 only when all pass.
@Suite(
    "the purchase path, online revocation in `signet verify`, and the fixtures' PKI (issue 53): the acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct PurchaseRevocationFixturesAcceptanceTests {
    @Test("relayed foreign transactions never make the instance unready, Apple's do; non-transactions are 422 malformed_payload; revoked is certificate_revoked, silence is hard's revocation_unavailable and soft's note; the fixtures' leaf is unique, stable and current")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("purchase_revocation_fixtures_acceptance.py")
    }
}
