import Foundation
import SignetTestSupport
import Testing

/// Issue 56, item 3 and the frequency cap, checked from the outside:
/// `Tests/Acceptance/retention_records_acceptance.py`, written from the documentation alone
/// (docs/retention.md "What was answered, and who stayed", docs/operations.md), drives the built
/// `signet` binary: a request Apple sends again (re-signed, its identifier in either case, after
/// the purchase changed, after a restart) gets the same body and counts `replayed`; frequency
/// caps per rule and across rules, in and out of their window, across a restart; outcomes from
/// the purchase's later notifications, out of order; `signet retention report` and
/// `GET /v1/retention/report` agreeing, their windows and their refusals.
@Suite(
    "Retention records (issue 56): the acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct RetentionRecordsAcceptanceTests {
    @Test("answers kept and replayed, frequency caps, outcomes and the report, as the docs promise")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("retention_records_acceptance.py")
    }
}
