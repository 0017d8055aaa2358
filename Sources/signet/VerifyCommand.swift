import AppStoreModels
import ArgumentParser
import Foundation
import SignetCore
import SignetHTTP
import SignetJWS
import SignetOpenSSL

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verifies notifications and prints one JSON verdict per input line.",
        discussion: """
            Reads NDJSON lines ({"signedPayload": ...}, {"signedTransaction": ...}, {"signedRenewalInfo": ...} or a bare JWS) from the files, or stdin when none is given, and prints one JSON object per line, in order:
              {"line": 1, "ok": true, "notificationType": "DID_RENEW",
               "subtype": null, "notificationUUID": ..., "environment": "Sandbox",
               "bundleId": ..., "signedDate": 1730000000000}
              {"line": 2, "ok": false, "reason": "invalid_signature", "detail": "..."}

            With several files each object also names its "file".

            The full verification always runs: signature, chain to the roots (the built-in Apple Root CA - G3 unless --root or SIGNET_ROOT_CERTS says otherwise), Apple's OIDs, validity at signedDate, nested JWS. Claims are checked only when given: --environment, --bundle-id, --app-apple-id. Each flag left out is taken from the SIGNET_* variable `signet run` reads (SIGNET_ROOT_CERTS, SIGNET_ENVIRONMENT, SIGNET_BUNDLE_ID, SIGNET_APP_APPLE_ID, SIGNET_VERIFY_WORKERS), so `source demo/fixtures.env` configures both. Reason codes: docs/reason-codes.md.

            Exit codes: 0 every line verified, 1 some line was rejected, 2 usage or configuration error.

            Examples:
              signet verify Tests/Fixtures/apple-real/notifications.ndjson
              signet verify --root demo/root.pem --environment Sandbox \\
                --bundle-id com.example.signet demo/notifications.ndjson
            """)

    @Option(name: .customLong("root"), help: "A trusted root certificate file (PEM or DER; repeatable), or `apple` for the built-in Apple Root CA - G3. Default: $SIGNET_ROOT_CERTS, else apple.")
    var roots: [String] = []

    @Option(help: "Require this environment (Production, Sandbox), or one of several (Production,Sandbox). Default: $SIGNET_ENVIRONMENT, else any.")
    var environment: String?

    @Option(help: "Require this bundle id. Default: $SIGNET_BUNDLE_ID, else any.")
    var bundleId: String?

    @Option(help: "Require this app Apple ID (compared for Production payloads). Default: $SIGNET_APP_APPLE_ID.")
    var appAppleId: Int64?

    @Option(help: "Threads to verify with. Default: $SIGNET_VERIFY_WORKERS, else all cores.")
    var jobs: Int?

    @Option(help: "Longest accepted line in bytes; longer lines are rejected with line_too_large.")
    var maxLineBytes: Int = 1 << 20

    @Option(help: ArgumentHelp(
        "Ask each verified chain's issuers whether a certificate was revoked (OCSP, else the CRL): off, soft or hard. Default: off.",
        discussion: "A revoked certificate makes the line not ok (certificate_revoked), in both modes. When no issuer answers, hard makes the line not ok (revocation_unavailable) and soft keeps it ok with a \"revocation\" note: a single run has no earlier good answer whose grace soft could use, as a pipeline does."))
    var revocation: RevocationOption = .off

    @Option(help: "With --revocation: how long one OCSP or CRL request may take, in seconds (1 to 60).")
    var revocationDeadline: Int = 5

    @Argument(help: "NDJSON files (default: stdin).")
    var files: [String] = []

    /// The settings in force: each flag, else the SIGNET_* variable `signet run` reads, so
    /// `source fixtures.env` configures both commands the same way.
    private struct Settings {
        var roots: [String]
        var environment: String?
        var bundleId: String?
        var appAppleId: Int64?
        var jobs: Int
    }

    private func settings() throws -> Settings {
        let env = Terminal.environment
        func value(_ name: String) -> String? {
            guard let text = env[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        let roots = !self.roots.isEmpty
            ? self.roots
            : (value("SIGNET_ROOT_CERTS")?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? ["apple"])
        var appAppleId = self.appAppleId
        if appAppleId == nil, let text = value("SIGNET_APP_APPLE_ID") {
            guard let parsed = Int64(text) else { throw ValidationError("SIGNET_APP_APPLE_ID must be a number, got '\(text)'") }
            appAppleId = parsed
        }
        if let jobs, !(1...256).contains(jobs) { throw ValidationError("--jobs must be between 1 and 256") }
        var jobs = self.jobs
        if jobs == nil, let text = value("SIGNET_VERIFY_WORKERS") {
            guard let parsed = Int(text), parsed >= 0 else { throw ValidationError("SIGNET_VERIFY_WORKERS must be 0 or more, got '\(text)'") }
            jobs = parsed
        }
        let threads = jobs.flatMap { $0 == 0 ? nil : $0 } ?? ProcessInfo.processInfo.activeProcessorCount
        return Settings(
            roots: roots, environment: environment ?? value("SIGNET_ENVIRONMENT"), bundleId: bundleId ?? value("SIGNET_BUNDLE_ID"),
            appAppleId: appAppleId, jobs: threads)
    }

    /// `Production,Sandbox` as its names; nil (not checked) as none.
    private static func environments(_ setting: String?) -> [String] {
        (setting ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func validate() throws {
        let settings = try settings()
        guard settings.jobs >= 1, settings.jobs <= 256 else { throw ValidationError("--jobs must be between 1 and 256") }
        guard maxLineBytes >= 64 else { throw ValidationError("--max-line-bytes must be at least 64") }
        guard (1...60).contains(revocationDeadline) else { throw ValidationError("--revocation-deadline must be 1 to 60 seconds") }
        let environments = Self.environments(settings.environment)
        if environments.isEmpty || !environments.allSatisfy(AppStoreEnvironment.documentedValues.map(\.rawValue).contains), let environment = settings.environment {
            throw ValidationError(
                "--environment (or SIGNET_ENVIRONMENT) must be Production or Sandbox, or both comma-separated (Xcode and LocalTesting only with private --root), got '\(environment)'")
        }
        if environments.contains("Production"), settings.appAppleId == nil {
            throw ValidationError("--environment Production needs --app-apple-id or SIGNET_APP_APPLE_ID (Apple's library requires it too)")
        }
        try InputFiles.validate(files)
    }

    func run() async throws {
        signal(SIGPIPE, SIG_IGN)
        let settings = try settings()
        let verifier = try makeVerifier(settings)
        var options = LineSource.Options()
        options.maxLineBytes = maxLineBytes
        options.skipBlankLines = false
        let inputs = InputFiles.sources(files, options: options)
        let gate = revocation == .off ? nil : RevocationGate(
            policy: RevocationPolicy(mode: revocation.mode, deadline: .seconds(revocationDeadline), retryTimeout: .zero),
            checker: OCSPRevocationChecker(
                transport: AsyncHTTPClientOCSPTransport(), options: .init(deadline: .seconds(revocationDeadline))))
        var rejected = 0
        for source in inputs {
            try await source.open()
            while let records = try await source.nextBatch(maxRecords: 512) {
                var verdicts = records.map { Verdict(record: $0) }
                verdicts.concurrentUpdate(maxThreads: settings.jobs) { verdict in verdict.evaluate(with: verifier) }
                if let gate {
                    // One line at a time: the checker's cache answers every later line of a chain.
                    for index in verdicts.indices where verdicts[index].ok { await verdicts[index].checkRevocation(with: gate) }
                }
                var out: [UInt8] = []
                for verdict in verdicts {
                    if !verdict.ok { rejected += 1 }
                    out += verdict.json(file: files.count > 1 ? source.stream : nil)
                    out.append(0x0A)
                }
                try Terminal.writeStdout(out)
            }
            try await source.close()
        }
        if rejected > 0 { throw ExitCode.failure }
    }

    private func makeVerifier(_ settings: Settings) throws -> AppStoreVerifier {
        let rootCertificates: [X509Certificate]
        do {
            rootCertificates = try AppleRoots.load(settings.roots)
        } catch {
            throw ConfigurationFailure(description: "signet: \(error)")
        }
        let configuration = VerifierConfiguration(
            roots: rootCertificates,
            environments: Set(Self.environments(settings.environment).map(AppStoreEnvironment.init(rawValue:))),
            bundleId: settings.bundleId,
            appAppleId: settings.appAppleId)
        do {
            return try AppStoreVerifier(configuration: configuration)
        } catch {
            throw ConfigurationFailure(description: "signet: \(error)")
        }
    }
}

/// The outcome for one input line.
private struct Verdict: Sendable {
    let position: SourcePosition
    let raw: [UInt8]
    var preRejected: RecordRejection?
    var result: Result<VerifiedPayload, RecordRejection>?
    /// Soft mode's note when no issuer answered (the line stays ok).
    var revocationNote: String?

    init(record: Record) {
        position = record.position
        raw = record.raw
        if case .rejected(let rejection, _) = record.status { preRejected = rejection }
    }

    var ok: Bool { if case .success = result { true } else { false } }

    /// Asks the issuers of every chain the verified payload was signed under, as the verify
    /// stage's gate does for a batch of one: revoked fails the line; no answer fails it in hard
    /// mode and leaves a note in soft mode.
    mutating func checkRevocation(with gate: RevocationGate) async {
        guard case .success(let verified) = result else { return }
        var record = Record(raw: raw, position: position)
        record[VerifiedPayloadPart.self] = verified
        var batch = RecordBatch(records: [record])
        do {
            try await gate.apply(to: &batch, stage: "verify")
            if case .rejected(let rejection, _) = batch.records[0].status { result = .failure(rejection) }
        } catch let unavailable as RevocationUnavailable {
            if gate.policy.mode == .hard {
                result = .failure(RecordRejection(.revocationUnavailable, unavailable.detail))
            } else {
                revocationNote = "unavailable: \(unavailable.detail)"
            }
        } catch {
            result = .failure(RecordRejection(.revocationUnavailable, "\(error)"))
        }
    }

    mutating func evaluate(with verifier: AppStoreVerifier) {
        if let preRejected {
            result = .failure(preRejected)
            return
        }
        do throws(RecordRejection) {
            let envelope = try DecodeStage.envelope(from: raw)
            switch envelope.kind {
            case .notification: result = .success(.notification(try verifier.verifyNotification(envelope.jws)))
            case .transaction: result = .success(.transaction(try verifier.verifyTransaction(envelope.jws)))
            case .renewalInfo: result = .success(.renewalInfo(try verifier.verifyRenewalInfo(envelope.jws)))
            case .status:
                result = .success(.status(
                    try verifier.verifyStatus(transaction: envelope.jws, renewalInfo: envelope.renewalJWS ?? "", status: envelope.status)))
            }
        } catch {
            result = .failure(error)
        }
    }

    func json(file: String?) -> [UInt8] {
        var json = JSONText()
        json.beginObject()
        json.field("file", file)
        json.key("line"); json.int(position.offset)
        switch result {
        case .success(let verified):
            json.key("ok"); json.bool(true)
            if let revocationNote { json.field("revocation", revocationNote) }
            switch verified {
            case .notification(let notification):
                let payload = notification.payload
                json.key("kind"); json.string("notification")
                json.key("notificationType"); nullable(&json, payload.notificationType?.rawValue)
                json.key("subtype"); nullable(&json, payload.subtype?.rawValue)
                json.key("notificationUUID"); nullable(&json, payload.notificationUUID)
                json.key("environment"); nullable(&json, payload.effectiveEnvironment?.rawValue)
                json.key("bundleId"); nullable(&json, payload.effectiveBundleId)
                json.key("signedDate"); nullable(&json, payload.signedDate?.millisecondsSince1970)
            case .transaction(let transaction):
                let payload = transaction.payload
                json.key("kind"); json.string("transaction")
                json.key("transactionId"); nullable(&json, payload.transactionId)
                json.key("originalTransactionId"); nullable(&json, payload.originalTransactionId)
                json.key("environment"); nullable(&json, payload.environment?.rawValue)
                json.key("bundleId"); nullable(&json, payload.bundleId)
                json.key("signedDate"); nullable(&json, payload.signedDate?.millisecondsSince1970)
            case .renewalInfo(let renewalInfo):
                let payload = renewalInfo.payload
                json.key("kind"); json.string("renewalInfo")
                json.key("originalTransactionId"); nullable(&json, payload.originalTransactionId)
                json.key("environment"); nullable(&json, payload.environment?.rawValue)
                json.key("signedDate"); nullable(&json, payload.signedDate?.millisecondsSince1970)
            case .status(let status):
                let payload = status.transaction.payload
                json.key("kind"); json.string("status")
                json.key("transactionId"); nullable(&json, payload.transactionId)
                json.key("originalTransactionId"); nullable(&json, payload.originalTransactionId)
                json.key("environment"); nullable(&json, payload.environment?.rawValue)
                json.key("bundleId"); nullable(&json, payload.bundleId)
                json.key("signedDate"); nullable(&json, payload.signedDate?.millisecondsSince1970)
                json.key("status"); nullable(&json, status.status.map(Int64.init))
            }
        case .failure(let rejection):
            json.key("ok"); json.bool(false)
            json.key("reason"); json.string(rejection.reason.rawValue)
            json.key("detail"); json.string(rejection.detail)
        case nil:
            json.key("ok"); json.bool(false)
        }
        json.endObject()
        return json.bytes
    }

    private func nullable(_ json: inout JSONText, _ value: String?) {
        if let value { json.string(value) } else { json.null() }
    }

    private func nullable(_ json: inout JSONText, _ value: Int64?) {
        if let value { json.int(value) } else { json.null() }
    }
}

/// `--revocation off|soft|hard`: the values of the verify stage's `revocation.mode`.
enum RevocationOption: String, ExpressibleByArgument, CaseIterable {
    case off, soft, hard

    var mode: RevocationPolicy.Mode { RevocationPolicy.Mode(rawValue: rawValue) ?? .off }
}
