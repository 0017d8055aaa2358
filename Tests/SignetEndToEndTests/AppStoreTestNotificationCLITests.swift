import AppStoreModels
import Foundation
import SignetTestSupport
import Testing

/// `signet appstore test-notification` (issue 21 §3) against the fake App Store Server API:
/// the request, the polling past "not found yet", the attempts printed, the exit status.
@Suite("signet appstore test-notification end to end", .tags(.endToEnd), .timeLimit(.minutes(5)))
struct AppStoreTestNotificationCLITests {
    @Test("a delivered TEST notification: its attempts on stdout, exit 0", .ownThread)
    func delivered() async throws {
        // Production: Apple's 1 request/s for these endpoints (Sandbox gets 0.1/s).
        try await BackfillTestBed.with(count: 1, environment: .production) { bed in
            bed.fake.setTestNotificationResults(["NO_RESPONSE", "SUCCESS"])
            // The first status poll finds nothing yet (4040008), as right after the request.
            bed.fake.script([.error(status: 404, errorCode: 4_040_008)], on: .testNotificationStatus)
            let result = try await bed.signet(
                ["appstore", "test-notification", "--interval", "1s", "--timeout", "30s"], dataDir: bed.dataDir("test"))
            #expect(result.exitCode == 0, "\(result.stderr)")
            #expect(result.lines.count == 2, "\(result.stdoutText)")
            #expect(result.lines.first?.hasPrefix("attempt 1 at ") == true && result.lines.first?.hasSuffix(": NO_RESPONSE") == true)
            #expect(result.lines.last?.hasSuffix(": SUCCESS") == true, "\(result.stdoutText)")
            #expect(result.stderr.contains("Apple delivered the TEST notification"), "\(result.stderr)")
            #expect(bed.fake.requests(.requestTestNotification).count == 1)
            let polls = bed.fake.requests(.testNotificationStatus)
            #expect(polls.count == 2 && polls.map(\.status) == [404, 200], "\(polls.map(\.status))")
            let token = try #require(polls.first?.pathParameter)
            #expect(result.stderr.contains(token))
        }
    }

    @Test("no successful attempt in time: exit 1 with what to check", .ownThread)
    func notDelivered() async throws {
        try await BackfillTestBed.with(count: 1, environment: .production) { bed in
            bed.fake.setTestNotificationResults(["TIMED_OUT"])
            let result = try await bed.signet(
                ["appstore", "test-notification", "--interval", "1s", "--timeout", "3s"], dataDir: bed.dataDir("test"))
            #expect(result.exitCode == 1, "\(result.stderr)")
            #expect(result.lines == result.lines.filter { $0.hasSuffix(": TIMED_OUT") } && result.lines.count == 1, "\(result.stdoutText)")
            #expect(result.stderr.contains("no send attempt succeeded within 3s"), "\(result.stderr)")
        }
    }

    @Test("missing credentials: one line, exit 2", .ownThread)
    func missingCredentials() async throws {
        let result = try await SignetProcess.output(["appstore", "test-notification"], environment: ["SIGNET_BUNDLE_ID": "com.example.signet"], timeout: 60)
        #expect(result.exitCode == 2)
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("SIGNET_APPSTORE_KEY_ID"), "\(result.stderr)")
    }
}
