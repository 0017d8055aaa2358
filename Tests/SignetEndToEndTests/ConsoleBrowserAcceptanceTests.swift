import Foundation
import SignetTestSupport
import Testing

/// Issue 57's console, checked from the outside in a real headless Chromium:
/// `Tests/Acceptance/console_browser_acceptance.py`, written from the documentation alone
/// (docs/console.md, docs/support.md, Apple's rules), drives the built `signet` binary with
/// Selenium against a fake App Store that checks every JWT: sign-in and its cookie, the
/// throttle and its counts, the security headers and no script on any page, search by every
/// identifier (order ids and renewals through Apple), the customer's page with hostile fields
/// shown as text, extend / set token / record consent with their confirmations and the audit
/// log, a resubmitted confirmation not sent twice, forged forms and a read-only credential
/// refused, sign-out and idle sessions, the main flow by keyboard alone, the operations page.
@Suite(
    "Support console (issue 57): the browser acceptance script against the binary",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(8)))
struct ConsoleBrowserAcceptanceTests {
    @Test("the console in a real browser, as the docs promise")
    func acceptanceScript() async throws {
        try await AcceptanceScript.expectPasses("console_browser_acceptance.py", timeout: 420)
    }
}
