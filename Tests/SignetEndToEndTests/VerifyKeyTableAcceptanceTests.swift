import Foundation
import SignetTestSupport
import Testing

/// verify's per-key ES256 table checked from the outside: `Tests/Acceptance/verify_key_table_acceptance.py`,
/// written from the documentation alone (docs/verification.md "Speed", docs/reason-codes.md, README.md, the
/// commands' own `--help`), makes `signet fixtures --count 1500` (one trusted leaf signing ~3,900 JWS), two more
/// leaves under the fixtures' intermediate (a rotated key, and another key with the first leaf's serial and
/// subject) and self-made chains, and forges lines with their keys: bits flipped in r or s, r and s swapped,
/// r or s = 0, n, n - 1, r = p, all 0xFF, another key's signature, DER / 63 / 65 / 0 bytes, payload or header
/// altered, a verification point at infinity, x5c of one leaf signed by another, forged nested
/// signedTransactionInfo / signedRenewalInfo, dates outside the leaf's validity, and malleated (r, n - s)
/// signatures that must verify exactly as the originals. Each line gets the same verdict (ok, reason, detail)
/// in a fresh process, at the start of a long stream, around the 256th signature and after every table was
/// built, with `signet verify --jobs 1` and `--jobs 2`; valid lines verify identically early and late; counts
/// and exit statuses are exact; 1,200 lines from self-made keys never verify and keep one reason and detail;
/// and through `signet run` (the default pipeline) each forged line is dead-lettered at every place with the
/// same reason, detail and id, with exact summary counts.
@Suite(
    "verify's key table: the acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct VerifyKeyTableAcceptanceTests {
    @Test("forged, altered and out-of-range signatures get the same verdict before and after a key's table, as docs/verification.md promises")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("verify_key_table_acceptance.py")
    }
}
