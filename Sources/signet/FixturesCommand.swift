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
              DIR/realtime-requests.ndjson  a retention request per
                                        subscription, as Apple POSTs it
              DIR/realtime-refused.ndjson   requests to refuse (other app,
                                        forged, other environment, ...)
              DIR/fixtures.env          export lines for the default pipeline: source it
              DIR/pki/                  keys and certificates, reused by later calls

            With --stdout, notifications go to standard output instead (for very large streams). With --type, only notifications of that type (DID_RENEW) or type and subtype (DID_RENEW/BILLING_RECOVERY) are made, for instance one signed notification to post to a backend under test; `signet fixtures --list-types` lists them.

            With --leaf-ocsp-url and --intermediate-ocsp-url the certificates name OCSP responders in their authorityInfoAccess, to try verify's `revocation:` policy against `openssl ocsp -port` serving DIR/pki (scripts/bench.py does); --leaf-crl-url and --intermediate-crl-url name CRL distribution points, for its CRL fallback. DIR/pki keeps the keys; each call issues the certificates again (with that call's URLs) and writes them there, so they are the chain of the notifications just written. The leaf's serial number comes from its key: the same on every call, different for every PKI, so one leaf can be revoked alone.

            Examples:
              signet fixtures --out demo --count 1000 && source demo/fixtures.env
              signet run < demo/notifications.ndjson
              signet fixtures --out demo --now --count 1 --stdout \\
                --type DID_FAIL_TO_RENEW/GRACE_PERIOD > one.json
              curl -H 'Content-Type: application/json' --data-binary @one.json \\
                http://127.0.0.1:8080/notifications
            """)

    @Option(help: "The folder to write (created if missing).")
    var out: String?

    @Option(help: "How many notifications.")
    var count: Int = 100

    @Option(help: "Seed for the sample contents (the keys are always fresh unless DIR/pki exists). Default: 1, or with --now the current time, so each call's notifications have new ids and are not taken for retries of the last ones.")
    var seed: UInt64?

    @Option(help: "Bundle id the samples carry.")
    var bundleId: String = "com.example.signet"

    @Option(help: "Environment the samples carry: Sandbox or Production.")
    var environment: String = "Sandbox"

    @Option(help: "App Apple ID the samples carry (Production needs one).")
    var appAppleId: Int64?

    @Flag(help: "Write the notifications to standard output instead of DIR/notifications.ndjson.")
    var stdout = false

    @Option(help: "Only this notification type, or TYPE/SUBTYPE (repeatable; see --list-types).")
    var type: [String] = []

    @Flag(help: "Print every documented TYPE and TYPE/SUBTYPE, then exit.")
    var listTypes = false

    @Flag(help: "Date the samples just before now instead of early 2025, so their subscriptions are current (a demo's `signet entitlements` then says entitled).")
    var now = false

    @Option(help: ArgumentHelp("An OCSP responder URL the leaf certificate names (answered for the intermediate).", valueName: "url"))
    var leafOcspUrl: String?

    @Option(help: ArgumentHelp("An OCSP responder URL the intermediate names (answered for the root).", valueName: "url"))
    var intermediateOcspUrl: String?

    @Option(help: ArgumentHelp("A CRL distribution point the leaf names (a list the intermediate signs).", valueName: "url"))
    var leafCrlUrl: String?

    @Option(help: ArgumentHelp("A CRL distribution point the intermediate names (a list the root signs).", valueName: "url"))
    var intermediateCrlUrl: String?

    func validate() throws {
        guard listTypes || out != nil else { throw ValidationError("--out DIR is required: the folder of the test PKI and samples") }
        guard count >= 0 else { throw ValidationError("--count must not be negative") }
        _ = try combinations()
        guard ["Sandbox", "Production"].contains(environment) else {
            throw ValidationError("--environment must be Sandbox or Production")
        }
        if environment == "Production" && appAppleId == nil {
            throw ValidationError("--environment Production needs --app-apple-id (Production notifications carry one)")
        }
    }

    /// The documented combinations `--type` names: a bare type takes all of its subtypes.
    private func combinations() throws -> [NotificationCombination] {
        try type.flatMap { name -> [NotificationCombination] in
            let matching = NotificationCombination.documented.filter { $0.description == name || $0.notificationType.rawValue == name }
            guard !matching.isEmpty else {
                throw ValidationError("--type \(name) is not a documented notification type or TYPE/SUBTYPE (signet fixtures --list-types)")
            }
            // A bare type names all its subtypes; TYPE/SUBTYPE exactly one.
            return matching.contains { $0.description == name } ? matching.filter { $0.description == name } : matching
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        if listTypes {
            try Terminal.printLine(Array(NotificationCombination.documented.map(\.description).joined(separator: "\n").utf8))
            return
        }
        let out = self.out ?? "."
        var fixtures = FixtureSet(
            directory: URL(fileURLWithPath: out), bundleId: bundleId, environment: AppStoreEnvironment(rawValue: environment),
            appAppleId: appAppleId, seed: seed ?? (now ? UInt64(Date().timeIntervalSince1970 * 1000) : 1),
            start: now ? FixtureSet.start(endingBefore: Int64(Date().timeIntervalSince1970 * 1000), count: count) : nil)
        fixtures.only = try combinations()
        fixtures.leafOCSPURL = leafOcspUrl
        fixtures.intermediateOCSPURL = intermediateOcspUrl
        fixtures.leafCRLURL = leafCrlUrl
        fixtures.intermediateCRLURL = intermediateCrlUrl
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
            "wrote \(summary.notifications) notifications, \(summary.transactions) forwarded transactions, "
                + "\(summary.forged) forged lines and \(summary.realtimeRequests) real-time retention requests to \(out); "
                + "trust \(summary.rootPath) (source \(out)/fixtures.env)")
    }
}
