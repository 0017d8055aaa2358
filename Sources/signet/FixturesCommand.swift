import AppStoreModels
import ArgumentParser
import Foundation
import SignetFixtures

struct FixturesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fixtures",
        abstract: "Writes a private Apple-shaped test PKI and signed sample notifications.",
        discussion: """
            Makes a P-384 root and intermediate carrying Apple's marker OIDs and a P-256 leaf, and signs notifications of every documented type and subtype, each with a nested signed transaction and (for subscriptions) renewal info — exactly the shape Apple sends, but trusted only by whoever configures DIR/root.pem. Output:
              DIR/root.pem              the root to trust (SIGNET_ROOT_CERTS, --root)
              DIR/notifications.ndjson  one {"signedPayload": ...} per line
              DIR/transactions.ndjson   {"signedTransaction": ...}, as apps send them
              DIR/forged.ndjson         lines that must be rejected (tampered, rogue
                                        root, other app, alg none, ...)
              DIR/fixtures.env          export lines for the default pipeline: source it
              DIR/pki/                  keys and certificates, reused by later calls

            With --stdout, notifications go to standard output instead (for very large streams).

            Example:
              signet fixtures --out demo --count 1000 && source demo/fixtures.env
              signet run < demo/notifications.ndjson
            """)

    @Option(help: "The folder to write (created if missing).")
    var out: String

    @Option(help: "How many notifications.")
    var count: Int = 100

    @Option(help: "Seed for the sample contents (the keys are always fresh unless DIR/pki exists).")
    var seed: UInt64 = 1

    @Option(help: "Bundle id the samples carry.")
    var bundleId: String = "com.example.signet"

    @Option(help: "Environment the samples carry: Sandbox or Production.")
    var environment: String = "Sandbox"

    @Option(help: "App Apple ID the samples carry (Production needs one).")
    var appAppleId: Int64?

    @Flag(help: "Write the notifications to standard output instead of DIR/notifications.ndjson.")
    var stdout = false

    @Flag(help: "Date the samples just before now instead of early 2025, so their subscriptions are current (a demo's `signet entitlements` then says entitled).")
    var now = false

    func validate() throws {
        guard count >= 0 else { throw ValidationError("--count must not be negative") }
        guard ["Sandbox", "Production"].contains(environment) else {
            throw ValidationError("--environment must be Sandbox or Production")
        }
        if environment == "Production" && appAppleId == nil {
            throw ValidationError("--environment Production needs --app-apple-id (Production notifications carry one)")
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let fixtures = FixtureSet(
            directory: URL(fileURLWithPath: out), bundleId: bundleId, environment: AppStoreEnvironment(rawValue: environment),
            appAppleId: appAppleId, seed: seed,
            start: now ? FixtureSet.start(endingBefore: Int64(Date().timeIntervalSince1970 * 1000), count: count) : nil)
        if stdout {
            // A DIR made earlier keeps its files: only a new one gets its root, env file and PKI
            // (written with zero notifications), so `--stdout` never empties DIR's NDJSON files.
            let directory = URL(fileURLWithPath: out)
            let rootPath = directory.appendingPathComponent("root.pem").path
            let made = ["root.pem", "pki"].allSatisfy {
                FileManager.default.fileExists(atPath: directory.appendingPathComponent($0).path)
            }
            if !made { _ = try fixtures.write(count: 0) }
            let pki = try fixtures.loadOrCreatePKI()
            var buffer: [UInt8] = []
            try fixtures.streamNotifications(count: count, pki: pki) { line, _, _ in
                buffer += line
                buffer.append(0x0A)
                if buffer.count >= 1 << 20 {
                    try Terminal.writeStdout(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            try Terminal.writeStdout(buffer)
            Terminal.note("wrote \(count) notifications to stdout; root: \(rootPath)")
            return
        }
        let summary = try fixtures.write(count: count)
        Terminal.note(
            "wrote \(summary.notifications) notifications, \(summary.transactions) forwarded transactions and "
                + "\(summary.forged) forged lines to \(out); trust \(summary.rootPath) (source \(out)/fixtures.env)")
    }
}
