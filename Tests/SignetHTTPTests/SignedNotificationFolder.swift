import SignetFixtures
import SignetTestSupport

/// A folder with a test PKI's root and `count` notifications its leaf signed, for pipelines
/// that write `out.ndjson` and `dead.ndjson` beside them.
struct SignedNotificationFolder {
    let directory: TemporaryDirectory
    let rootPath: String
    let lines: [String]

    init(_ pki: TestPKI, count: Int = 3) throws {
        directory = try TemporaryDirectory(prefix: "signet-notifications")
        rootPath = try directory.write("root.pem", pki.rootPEM)
        var lines: [String] = []
        try FixtureSet(directory: directory.url).streamNotifications(count: count, pki: pki) { line, _, _ in
            lines.append(String(decoding: line, as: UTF8.self))
        }
        self.lines = lines
    }

    var out: [String] { (try? WebhookHarness.lines(directory.path("out.ndjson"))) ?? [] }
    var dead: [String] { (try? WebhookHarness.lines(directory.path("dead.ndjson"))) ?? [] }
}
