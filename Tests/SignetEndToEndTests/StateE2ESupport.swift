import CSQLite
import Foundation
import SignetFixtures
import SignetTestSupport

/// Shared machinery of the end-to-end state tests (`State*` and `Crash*` suites): a corpus of
/// signed inputs (fixtures of every documented type, forged lines, forwarded transactions and
/// hand-made per-customer timelines), pipeline files, runs of the `signet` binary, and the
/// comparison of two runs' outputs, dead letters and SQLite state.
enum StateE2E {
    static let bundleId = "com.example.signet"
    static let day: Int64 = 86_400_000

    // MARK: - Running signet

    /// Runs `signet` with the corpus' trust settings (plus `extra`), failing on a timeout.
    static func signet(
        _ arguments: [String], stdin: Data = Data(), corpus: StateCorpus, extra: [String: String] = [:], timeout: TimeInterval = 90
    ) throws -> SignetProcess.Result {
        var environment = corpus.environment
        environment.merge(extra) { $1 }
        let result = try SignetProcess.run(arguments, stdin: stdin, environment: environment, timeout: timeout)
        if result.exitCode == -1 { throw StateE2EError("signet \(arguments.joined(separator: " ")) timed out: \(result.stderr)") }
        return result
    }

    /// The pipeline under test: Pipelines/stdin.yaml with a small batch size, a resumable
    /// `file` source with a checkpoint, and a file sink instead of stdout.
    static func filePipeline(input: URL, dataDir: URL, batchSize: Int = 8) -> String {
        let data = dataDir.path
        return """
            description: crash/restart test pipeline (Pipelines/stdin.yaml with a file source and sink)
            settings:
              batch_size: \(batchSize)
            stores:
              default: { type: sqlite, path: \(data)/signet.sqlite }
            source:
              type: file
              path: \(input.path)
              checkpoint: \(data)/checkpoint.json
              max_line_bytes: 1048576
            stages:
              - type: decode
              - type: verify
                roots: ${SIGNET_ROOT_CERTS:apple}
                environment: ${SIGNET_ENVIRONMENT:Sandbox}
                bundle_id: ${SIGNET_BUNDLE_ID}
                app_apple_id: ${SIGNET_APP_APPLE_ID:}
                workers: ${SIGNET_VERIFY_WORKERS:0}
              - type: dedupe
              - type: transition
                policy:
                  billing_retry_entitled: false
                  grace_period_entitled: true
                  family_shared_entitled: true
                  entitle_on_app_transaction: true
              - type: fanout
                default_sinks: [events]
            sinks:
              events:
                type: file
                path: \(data)/events.ndjson
            dead_letter:
              type: file
              path: \(data)/dead-letter.ndjson
              format: json

            """
    }

    /// A fresh data directory holding its own copy of the pipeline file.
    static func makeDataDir(_ corpus: StateCorpus, name: String, input: URL? = nil, batchSize: Int = 8) throws -> (dataDir: URL, pipeline: URL) {
        let dataDir = corpus.directory.appendingPathComponent("runs/\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dataDir, withIntermediateDirectories: true)
        let pipeline = dataDir.appendingPathComponent("pipeline.yaml")
        try filePipeline(input: input ?? corpus.mixedInput, dataDir: dataDir, batchSize: batchSize)
            .write(to: pipeline, atomically: true, encoding: .utf8)
        return (dataDir, pipeline)
    }

    // MARK: - What a run left behind

    /// Everything a (possibly interrupted and resumed) run left in its data directory.
    struct Outcome {
        /// Event lines of the sink file(s), in file order, exactly as written.
        var eventLines: [String]
        /// Dead-letter records parsed.
        var deadLetters: [[String: Any]]
        /// Every row of `subscriptions`, each column rendered as text, ordered by key.
        var subscriptions: [String: [String]]
        /// Every dedupe key.
        var dedupeKeys: Set<String>
        /// Outbox rows not marked delivered.
        var undelivered: Int

        /// eventId of each line (throws on a line that is not an event: a torn write).
        func eventIds() throws -> [String] {
            try eventLines.enumerated().map { index, line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let id = object["eventId"] as? String
                else { throw StateE2EError("events line \(index + 1) is not an event (torn write?): \(line.prefix(200))") }
                return id
            }
        }

        /// The distinct `input` fields of the dead-letter records.
        var deadLetterInputs: Set<String> { Set(deadLetters.compactMap { $0["input"] as? String }) }
    }

    static func outcome(dataDir: URL, eventFiles: [String] = ["events.ndjson"]) throws -> Outcome {
        var lines: [String] = []
        for name in eventFiles {
            let url = dataDir.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: url.path) else { continue }
            lines += try ndjsonLines(url)
        }
        let deadLetterURL = dataDir.appendingPathComponent("dead-letter.ndjson")
        var deadLetters: [[String: Any]] = []
        if FileManager.default.fileExists(atPath: deadLetterURL.path) {
            for (index, line) in try ndjsonLines(deadLetterURL).enumerated() {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    throw StateE2EError("dead-letter line \(index + 1) is not JSON (torn write?): \(line.prefix(200))")
                }
                deadLetters.append(object)
            }
        }
        let database = try SQLiteReader(path: dataDir.appendingPathComponent("signet.sqlite").path)
        defer { database.close() }
        var subscriptions: [String: [String]] = [:]
        for row in try database.rows("SELECT * FROM subscriptions ORDER BY original_transaction_id") {
            subscriptions[row[0]] = row
        }
        let keys = Set(try database.rows("SELECT key FROM dedupe_keys").map { $0[0] })
        let undelivered = Int(try database.rows("SELECT count(*) FROM outbox WHERE delivered_at IS NULL")[0][0]) ?? -1
        return Outcome(eventLines: lines, deadLetters: deadLetters, subscriptions: subscriptions, dedupeKeys: keys, undelivered: undelivered)
    }

    static func ndjsonLines(_ url: URL) throws -> [String] {
        let text = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        if !text.isEmpty && !text.hasSuffix("\n") {
            throw StateE2EError("\(url.lastPathComponent) does not end with a newline (torn write)")
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// Compares a crashed-and-resumed run with a clean one. Returns a list of problems (empty:
    /// equivalent) and how many events were delivered more than once (exact byte repeats).
    static func compare(clean: Outcome, crashed: Outcome, forged: [String]) throws -> (problems: [String], duplicates: Int) {
        var problems: [String] = []
        let cleanIds = try clean.eventIds()
        var cleanById: [String: String] = [:]
        for (id, line) in zip(cleanIds, clean.eventLines) {
            if cleanById[id] != nil { problems.append("the clean run emitted event \(id) twice") }
            cleanById[id] = line
        }
        var seen: [String: String] = [:]
        var duplicates = 0
        for (id, line) in zip(try crashed.eventIds(), crashed.eventLines) {
            guard let expected = cleanById[id] else {
                problems.append("event \(id) was emitted but is not in the clean run: \(line.prefix(300))")
                continue
            }
            if line != expected {
                problems.append("event \(id) emitted with different content:\n  clean:   \(expected)\n  crashed: \(line)")
            }
            if let earlier = seen[id] {
                duplicates += 1
                if earlier != line { problems.append("event \(id) delivered twice with different bytes") }
            }
            seen[id] = line
        }
        let lost = Set(cleanById.keys).subtracting(seen.keys)
        if !lost.isEmpty {
            problems.append("\(lost.count) events lost: " + lost.sorted().prefix(5).map { "\($0): \(cleanById[$0]!.prefix(200))" }.joined(separator: "\n  "))
        }

        // State: every purchase's snapshot, every dedupe key, nothing left in the outbox.
        for (id, row) in clean.subscriptions where crashed.subscriptions[id] != row {
            problems.append("state of \(id) differs:\n  clean:   \(row)\n  crashed: \(crashed.subscriptions[id] ?? ["<missing>"])")
        }
        for id in Set(crashed.subscriptions.keys).subtracting(clean.subscriptions.keys) {
            problems.append("state has \(id), the clean run has not")
        }
        if crashed.dedupeKeys != clean.dedupeKeys {
            problems.append("dedupe keys differ: \(crashed.dedupeKeys.symmetricDifference(clean.dedupeKeys).sorted().prefix(5))")
        }
        if crashed.undelivered != 0 { problems.append("\(crashed.undelivered) outbox rows left undelivered") }

        // Dead letters: each forged line at least once, and nothing else than the clean run rejected.
        let inputs = crashed.deadLetterInputs
        for line in forged where !inputs.contains(line) {
            problems.append("forged line missing from the dead-letter file: \(line.prefix(120))")
        }
        if inputs != clean.deadLetterInputs {
            problems.append("dead-letter inputs differ from the clean run: \(inputs.symmetricDifference(clean.deadLetterInputs).map { $0.prefix(100) })")
        }
        return (problems, duplicates)
    }

    // MARK: - JSON of payloads

    /// A tiny ordered JSON object builder (the payloads Apple signs are plain objects).
    struct JSON {
        private var members: [String] = []
        init() {}
        mutating func set(_ key: String, _ value: String?) {
            guard let value else { return }
            members.append("\(quote(key)):\(quote(value))")
        }
        mutating func set(_ key: String, _ value: Int64?) {
            guard let value else { return }
            members.append("\(quote(key)):\(value)")
        }
        mutating func set(_ key: String, _ value: Bool?) {
            guard let value else { return }
            members.append("\(quote(key)):\(value)")
        }
        mutating func set(_ key: String, object: JSON) {
            members.append("\(quote(key)):\(object.text)")
        }
        var text: String { "{" + members.joined(separator: ",") + "}" }
        var bytes: [UInt8] { Array(text.utf8) }

        private func quote(_ string: String) -> String {
            var out = "\""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                default:
                    if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
                }
            }
            return out + "\""
        }
    }
}

struct StateE2EError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Read-only SQLite access for assertions (the whole `subscriptions` table, dedupe keys,
/// outbox), independent of the code under test.
final class SQLiteReader {
    private var handle: OpaquePointer?

    init(path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { throw StateE2EError("no database at \(path)") }
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "?"
            sqlite3_close(handle)
            throw StateE2EError("cannot open \(path): \(message)")
        }
        // Parallel tests read the shared clean run's database at once. When a reader finds the WAL
        // index needing recovery, it rebuilds it under an exclusive lock, and another reader
        // without a busy handler gets "database is locked" instead of waiting the moment out.
        sqlite3_busy_timeout(handle, 10_000)
    }

    func rows(_ sql: String) throws -> [[String]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            throw StateE2EError("\(sql): \(String(cString: sqlite3_errmsg(handle)))")
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String]] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw StateE2EError("\(sql): \(String(cString: sqlite3_errmsg(handle)))") }
            let columns = sqlite3_column_count(statement)
            rows.append((0..<columns).map { column in
                if sqlite3_column_type(statement, column) == SQLITE_NULL { return "NULL" }
                return String(cString: sqlite3_column_text(statement, column))
            })
        }
        return rows
    }

    func close() {
        sqlite3_close(handle)
        handle = nil
    }
}

// MARK: - The corpus

/// A hand-made customer: one purchase whose history the test writes and signs itself.
struct TimelineCustomer: Sendable {
    var name: String
    var originalTransactionId: String
    var appAccountToken: String
    /// Expected after the whole history (evaluated now).
    var expectedState: String
    var expectedEntitled: Bool
    var expectedProductId: String
    /// Signed input lines, in delivery order.
    var lines: [String]
    /// Event types the history emits, in order (docs/state-machine.md).
    var expectedEvents: [String] = []
}

/// Inputs shared by every end-to-end state test, built once per test process: `signet
/// fixtures` output (every documented type, each a separate customer; forged lines;
/// forwarded transactions) and hand-made timelines signed with the same test PKI.
final class StateCorpus: Sendable {
    let directory: URL
    let environment: [String: String]
    let notificationLines: [String]
    let forgedLines: [String]
    let transactionLines: [String]
    let customers: [TimelineCustomer]
    /// All of the above mixed, with Apple-style retries: the crash tests' input.
    let mixedInput: URL
    let mixedLineCount: Int

    static let shared: Result<StateCorpus, any Error> = Result { try StateCorpus(count: 96) }

    static func get() throws -> StateCorpus { try shared.get() }

    /// The appTransactionIds the fixtures' RESCIND_CONSENT notifications name, in order.
    var rescindedAppTransactionIds: [String] {
        notificationLines.compactMap { line -> String? in
            guard let envelope = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let notification = (envelope["signedPayload"] as? String).flatMap(KafkaInput.jwsPayload),
                  notification["notificationType"] as? String == "RESCIND_CONSENT",
                  let signed = (notification["appData"] as? [String: Any])?["signedAppTransactionInfo"] as? String
            else { return nil }
            return KafkaInput.jwsPayload(signed)?["appTransactionId"] as? String
        }
    }

    /// The transactions the fixtures' CONSUMPTION_REQUEST notifications ask about (each once).
    var consumptionRequestTransactionIds: Set<String> {
        Set(notificationLines.compactMap { line -> String? in
            guard let envelope = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let notification = (envelope["signedPayload"] as? String).flatMap(KafkaInput.jwsPayload),
                  notification["notificationType"] as? String == "CONSUMPTION_REQUEST",
                  let signed = (notification["data"] as? [String: Any])?["signedTransactionInfo"] as? String
            else { return nil }
            return KafkaInput.jwsPayload(signed)?["transactionId"] as? String
        })
    }

    private init(count: Int) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-e2e-state-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        let fixtures = directory.appendingPathComponent("fixtures")
        try FileManager.default.createDirectory(at: fixtures, withIntermediateDirectories: true)
        self.directory = directory
        let made = try SignetProcess.run(["fixtures", "--out", fixtures.path, "--count", "\(count)", "--seed", "23"], timeout: 120)
        guard made.exitCode == 0 else { throw StateE2EError("signet fixtures failed (\(made.exitCode)): \(made.stderr)") }
        let root = fixtures.appendingPathComponent("root.pem").path
        environment = [
            "SIGNET_ROOT_CERTS": root, "SIGNET_ENVIRONMENT": "Sandbox", "SIGNET_BUNDLE_ID": StateE2E.bundleId,
            // One verify worker: the tests run several processes side by side on few cores.
            "SIGNET_VERIFY_WORKERS": "1",
        ]
        notificationLines = try StateE2E.ndjsonLines(fixtures.appendingPathComponent("notifications.ndjson"))
        forgedLines = try StateE2E.ndjsonLines(fixtures.appendingPathComponent("forged.ndjson"))
        transactionLines = try StateE2E.ndjsonLines(fixtures.appendingPathComponent("transactions.ndjson"))
        guard notificationLines.count == count, !forgedLines.isEmpty else {
            throw StateE2EError("unexpected fixture output: \(notificationLines.count) notifications, \(forgedLines.count) forged")
        }

        // The same PKI signs the timelines (FixtureSet reuses DIR/pki).
        let pki = try FixtureSet(directory: fixtures, bundleId: StateE2E.bundleId).loadOrCreatePKI()
        var builder = TimelineBuilder(signer: pki.signer, now: Int64(Date().timeIntervalSince1970 * 1000))
        customers = try builder.customers()

        // Mix: fixture notifications in order; after every 4th, the next timeline step (round
        // robin over customers, each customer's order kept); forged lines and forwarded
        // transactions spread out; retries of earlier lines (adjacent and far apart).
        var queues = customers.map { $0.lines[...] }
        var mixed: [String] = []
        var forged = forgedLines[...]
        var transactions = transactionLines[...]
        var next = 0
        for (index, line) in notificationLines.enumerated() {
            mixed.append(line)
            if index % 4 == 3 {
                for _ in 0..<queues.count {
                    defer { next = (next + 1) % queues.count }
                    if let step = queues[next].popFirst() {
                        mixed.append(step)
                        break
                    }
                }
            }
            if index % 13 == 5, let bad = forged.popFirst() { mixed.append(bad) }
            if index % 11 == 7, let forwarded = transactions.popFirst() { mixed.append(forwarded) }
            if index % 17 == 9 { mixed.append(line) }  // an immediate retry
            if index % 29 == 20 { mixed.append(mixed[index / 3]) }  // a retry days later
        }
        for queue in queues { mixed += queue }
        mixed += forged
        mixed += transactions
        mixed.append(notificationLines[1])
        mixedLineCount = mixed.count
        mixedInput = directory.appendingPathComponent("mixed.ndjson")
        try (mixed.joined(separator: "\n") + "\n").write(to: mixedInput, atomically: true, encoding: .utf8)
    }
}

/// Writes and signs per-customer histories as Apple would send them.
struct TimelineBuilder {
    let signer: JWSSigner
    let now: Int64
    private var nextId: Int64 = 2_000_000_990_000_000
    private var sequence = 0

    init(signer: JWSSigner, now: Int64) {
        self.signer = signer
        self.now = now
    }

    private let day = StateE2E.day
    private var monthly: String { "\(StateE2E.bundleId).premium.monthly" }
    private var yearly: String { "\(StateE2E.bundleId).premium.yearly" }

    private mutating func id() -> String {
        nextId += 1000 + Int64(sequence)
        return String(nextId)
    }

    private mutating func uuid() -> String {
        sequence += 1
        return String(format: "5e7a1e00-0000-4000-8000-%012x", sequence)
    }

    struct Period {
        var transactionId: String
        var productId: String
        var purchase: Int64
        var expires: Int64?
        var type = "Auto-Renewable Subscription"
        var revocation: Int64? = nil
        var reason = "PURCHASE"
    }

    func transaction(_ otid: String, _ token: String, _ period: Period, signed: Int64, originalPurchase: Int64) -> JSON {
        var t = JSON()
        t.set("transactionId", period.transactionId)
        t.set("originalTransactionId", otid)
        t.set("bundleId", StateE2E.bundleId)
        t.set("productId", period.productId)
        if period.expires != nil { t.set("subscriptionGroupIdentifier", "21000042") }
        t.set("purchaseDate", period.purchase)
        t.set("originalPurchaseDate", originalPurchase)
        t.set("expiresDate", period.expires)
        t.set("quantity", Int64(1))
        t.set("type", period.type)
        t.set("appAccountToken", token)
        t.set("inAppOwnershipType", "PURCHASED")
        t.set("signedDate", signed)
        if let revocation = period.revocation {
            t.set("revocationReason", Int64(0))
            t.set("revocationDate", revocation)
            t.set("revocationType", "REFUND_FULL")
        }
        t.set("environment", "Sandbox")
        t.set("transactionReason", period.reason)
        t.set("storefront", "USA")
        t.set("storefrontId", "143441")
        t.set("price", Int64(9990))
        t.set("currency", "USD")
        return t
    }
    typealias JSON = StateE2E.JSON

    func renewal(_ otid: String, _ token: String, product: String, autoRenew: Bool, signed: Int64, expires: Int64?,
                 intent: Int64? = nil, billingRetry: Bool = false, grace: Int64? = nil) -> JSON {
        var r = JSON()
        r.set("expirationIntent", intent)
        r.set("originalTransactionId", otid)
        r.set("autoRenewProductId", product)
        r.set("productId", product)
        r.set("autoRenewStatus", Int64(autoRenew ? 1 : 0))
        r.set("isInBillingRetryPeriod", billingRetry)
        r.set("gracePeriodExpiresDate", grace)
        r.set("signedDate", signed)
        r.set("environment", "Sandbox")
        r.set("renewalDate", expires)
        r.set("appAccountToken", token)
        return r
    }

    /// One signed notification line.
    mutating func notification(_ type: String, _ subtype: String?, signed: Int64, transaction: JSON, renewal: JSON?, status: Int64?) throws -> String {
        var data = JSON()
        data.set("bundleId", StateE2E.bundleId)
        data.set("bundleVersion", "1.4.2")
        data.set("environment", "Sandbox")
        data.set("signedTransactionInfo", try signer.sign(payload: transaction.bytes))
        if let renewal { data.set("signedRenewalInfo", try signer.sign(payload: renewal.bytes)) }
        data.set("status", status)
        var n = JSON()
        n.set("notificationType", type)
        n.set("subtype", subtype)
        n.set("notificationUUID", uuid())
        n.set(#"data"#, object: data)
        n.set("version", "2.0")
        n.set("signedDate", signed)
        return #"{"signedPayload":""# + (try signer.sign(payload: n.bytes)) + #""}"#
    }

    mutating func customers() throws -> [TimelineCustomer] {
        var all: [TimelineCustomer] = []
        let now = self.now, day = self.day
        let ago = { (days: Double) in now - Int64(days * Double(day)) }

        // Granted: bought 10 days ago (also forwarded by the app first), auto-renew off then on again,
        // plus a lifetime purchase under the same account token.
        do {
            let otid = id(), token = "a1a1a1a1-0000-4000-8000-00000000000a"
            let p = Period(transactionId: otid, productId: monthly, purchase: ago(10), expires: ago(10) + 30 * day)
            let forwarded = #"{"signedTransaction":""# + (try signer.sign(payload: transaction(otid, token, p, signed: p.purchase + 500, originalPurchase: p.purchase).bytes)) + #""}"#
            var lines = [forwarded]
            lines.append(try notification("SUBSCRIBED", "INITIAL_BUY", signed: p.purchase + 2000,
                transaction: transaction(otid, token, p, signed: p.purchase + 2000, originalPurchase: p.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: p.purchase + 2000, expires: p.expires), status: 1))
            lines.append(try notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signed: ago(5),
                transaction: transaction(otid, token, p, signed: ago(5), originalPurchase: p.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: false, signed: ago(5), expires: p.expires), status: 1))
            lines.append(try notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signed: ago(2),
                transaction: transaction(otid, token, p, signed: ago(2), originalPurchase: p.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: ago(2), expires: p.expires), status: 1))
            all.append(TimelineCustomer(name: "granted", originalTransactionId: otid, appAccountToken: token, expectedState: "active",
                                        expectedEntitled: true, expectedProductId: monthly, lines: lines, expectedEvents: ["granted", "auto_renew_disabled", "auto_renew_enabled"]))

            let lifetimeId = id()
            var lifetime = Period(transactionId: lifetimeId, productId: "\(StateE2E.bundleId).lifetime", purchase: ago(3), expires: nil)
            lifetime.type = "Non-Consumable"
            let line = try notification("ONE_TIME_CHARGE", nil, signed: ago(3) + 2000,
                transaction: transaction(lifetimeId, token, lifetime, signed: ago(3) + 2000, originalPurchase: lifetime.purchase), renewal: nil, status: nil)
            all.append(TimelineCustomer(name: "lifetime (same account as granted)", originalTransactionId: lifetimeId, appAccountToken: token,
                                        expectedState: "owned", expectedEntitled: true, expectedProductId: lifetime.productId, lines: [line], expectedEvents: ["granted"]))
        }

        // Expired: bought 70 days ago, renewed once, turned auto-renew off, expired 10 days ago.
        do {
            let otid = id(), token = "b2b2b2b2-0000-4000-8000-00000000000b"
            let first = Period(transactionId: otid, productId: monthly, purchase: ago(70), expires: ago(40))
            var second = Period(transactionId: id(), productId: monthly, purchase: ago(40), expires: ago(10))
            second.reason = "RENEWAL"
            var lines: [String] = []
            lines.append(try notification("SUBSCRIBED", "INITIAL_BUY", signed: first.purchase + 1000,
                transaction: transaction(otid, token, first, signed: first.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: first.purchase + 1000, expires: first.expires), status: 1))
            lines.append(try notification("DID_RENEW", nil, signed: second.purchase + 1000,
                transaction: transaction(otid, token, second, signed: second.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: second.purchase + 1000, expires: second.expires), status: 1))
            lines.append(try notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signed: ago(20),
                transaction: transaction(otid, token, second, signed: ago(20), originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: false, signed: ago(20), expires: second.expires), status: 1))
            lines.append(try notification("EXPIRED", "VOLUNTARY", signed: second.expires! + 60_000,
                transaction: transaction(otid, token, second, signed: second.expires! + 60_000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: false, signed: second.expires! + 60_000, expires: second.expires, intent: 1),
                status: 2))
            all.append(TimelineCustomer(name: "expired", originalTransactionId: otid, appAccountToken: token, expectedState: "expired",
                                        expectedEntitled: false, expectedProductId: monthly, lines: lines, expectedEvents: ["granted", "renewed", "auto_renew_disabled", "expired"]))
        }

        // Refunded: bought 8 days ago, refunded 3 days ago.
        do {
            let otid = id(), token = "c3c3c3c3-0000-4000-8000-00000000000c"
            var p = Period(transactionId: otid, productId: monthly, purchase: ago(8), expires: ago(8) + 30 * day)
            var lines: [String] = []
            lines.append(try notification("SUBSCRIBED", "INITIAL_BUY", signed: p.purchase + 1000,
                transaction: transaction(otid, token, p, signed: p.purchase + 1000, originalPurchase: p.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: p.purchase + 1000, expires: p.expires), status: 1))
            p.revocation = ago(3) - 60_000
            lines.append(try notification("REFUND", nil, signed: ago(3),
                transaction: transaction(otid, token, p, signed: ago(3), originalPurchase: p.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: false, signed: ago(3), expires: p.expires), status: 5))
            all.append(TimelineCustomer(name: "refunded", originalTransactionId: otid, appAccountToken: token, expectedState: "refunded",
                                        expectedEntitled: false, expectedProductId: monthly, lines: lines, expectedEvents: ["granted", "refunded", "auto_renew_disabled"]))
        }

        // Recovered: renewal failed into the grace period, then billing recovered.
        do {
            let otid = id(), token = "d4d4d4d4-0000-4000-8000-00000000000d"
            let first = Period(transactionId: otid, productId: monthly, purchase: ago(45), expires: ago(15))
            var second = Period(transactionId: id(), productId: monthly, purchase: ago(14), expires: ago(14) + 30 * day)
            second.reason = "RENEWAL"
            var lines: [String] = []
            lines.append(try notification("SUBSCRIBED", "INITIAL_BUY", signed: first.purchase + 1000,
                transaction: transaction(otid, token, first, signed: first.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: first.purchase + 1000, expires: first.expires), status: 1))
            lines.append(try notification("DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: first.expires! + 60_000,
                transaction: transaction(otid, token, first, signed: first.expires! + 60_000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: first.expires! + 60_000, expires: first.expires,
                                 intent: 2, billingRetry: true, grace: first.expires! + 16 * day), status: 4))
            lines.append(try notification("DID_RENEW", "BILLING_RECOVERY", signed: second.purchase + 1000,
                transaction: transaction(otid, token, second, signed: second.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: second.purchase + 1000, expires: second.expires), status: 1))
            all.append(TimelineCustomer(name: "recovered", originalTransactionId: otid, appAccountToken: token, expectedState: "active",
                                        expectedEntitled: true, expectedProductId: monthly, lines: lines, expectedEvents: ["granted", "grace_period_entered", "recovered"]))
        }

        // Restored: refunded, then the refund was reversed.
        do {
            let otid = id(), token = "e5e5e5e5-0000-4000-8000-00000000000e"
            var p = Period(transactionId: otid, productId: monthly, purchase: ago(20), expires: ago(20) + 30 * day)
            var lines: [String] = []
            lines.append(try notification("SUBSCRIBED", "INITIAL_BUY", signed: p.purchase + 1000,
                transaction: transaction(otid, token, p, signed: p.purchase + 1000, originalPurchase: p.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: p.purchase + 1000, expires: p.expires), status: 1))
            p.revocation = ago(6) - 60_000
            lines.append(try notification("REFUND", nil, signed: ago(6),
                transaction: transaction(otid, token, p, signed: ago(6), originalPurchase: p.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: false, signed: ago(6), expires: p.expires), status: 5))
            p.revocation = nil
            lines.append(try notification("REFUND_REVERSED", nil, signed: ago(5),
                transaction: transaction(otid, token, p, signed: ago(5), originalPurchase: p.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: ago(5), expires: p.expires), status: 1))
            all.append(TimelineCustomer(name: "restored", originalTransactionId: otid, appAccountToken: token, expectedState: "active",
                                        expectedEntitled: true, expectedProductId: monthly, lines: lines, expectedEvents: ["granted", "refunded", "auto_renew_disabled", "restored", "auto_renew_enabled"]))
        }

        // Upgrade: monthly, then upgraded to yearly (a new transaction).
        do {
            let otid = id(), token = "f6f6f6f6-0000-4000-8000-00000000000f"
            let first = Period(transactionId: otid, productId: monthly, purchase: ago(12), expires: ago(12) + 30 * day)
            let second = Period(transactionId: id(), productId: yearly, purchase: ago(6), expires: ago(6) + 365 * day)
            var lines: [String] = []
            lines.append(try notification("SUBSCRIBED", "INITIAL_BUY", signed: first.purchase + 1000,
                transaction: transaction(otid, token, first, signed: first.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: first.purchase + 1000, expires: first.expires), status: 1))
            lines.append(try notification("DID_CHANGE_RENEWAL_PREF", "UPGRADE", signed: second.purchase + 1000,
                transaction: transaction(otid, token, second, signed: second.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: yearly, autoRenew: true, signed: second.purchase + 1000, expires: second.expires), status: 1))
            all.append(TimelineCustomer(name: "upgraded", originalTransactionId: otid, appAccountToken: token, expectedState: "active",
                                        expectedEntitled: true, expectedProductId: yearly, lines: lines, expectedEvents: ["granted", "product_changed"]))
        }

        // Out of order: the renewal arrives before the (older) initial purchase, which must change nothing.
        do {
            let otid = id(), token = "07070707-0000-4000-8000-000000000007"
            let first = Period(transactionId: otid, productId: monthly, purchase: ago(34), expires: ago(4))
            var second = Period(transactionId: id(), productId: monthly, purchase: ago(4), expires: ago(4) + 30 * day)
            second.reason = "RENEWAL"
            var lines: [String] = []
            lines.append(try notification("DID_RENEW", nil, signed: second.purchase + 1000,
                transaction: transaction(otid, token, second, signed: second.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: second.purchase + 1000, expires: second.expires), status: 1))
            lines.append(try notification("SUBSCRIBED", "INITIAL_BUY", signed: first.purchase + 1000,
                transaction: transaction(otid, token, first, signed: first.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(otid, token, product: monthly, autoRenew: true, signed: first.purchase + 1000, expires: first.expires), status: 1))
            all.append(TimelineCustomer(name: "late initial buy", originalTransactionId: otid, appAccountToken: token, expectedState: "active",
                                        expectedEntitled: true, expectedProductId: monthly, lines: lines, expectedEvents: ["granted"]))
        }

        // Migrated (MIGRATION, Advanced Commerce): a new purchase names the old one as its
        // previousOriginalTransactionId. The old one ends (`migrated`), and its own renewal, signed
        // before the migration and delivered after it, does not bring it back.
        do {
            let old = id(), new = id(), token = "08080808-0000-4000-8000-000000000008"
            let first = Period(transactionId: old, productId: monthly, purchase: ago(40), expires: ago(10))
            var second = Period(transactionId: id(), productId: monthly, purchase: ago(10), expires: ago(10) + 30 * day)
            second.reason = "RENEWAL"
            let migrated = Period(transactionId: new, productId: monthly, purchase: ago(5), expires: ago(5) + 30 * day)
            var lines: [String] = []
            lines.append(try notification("SUBSCRIBED", "INITIAL_BUY", signed: first.purchase + 1000,
                transaction: transaction(old, token, first, signed: first.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(old, token, product: monthly, autoRenew: true, signed: first.purchase + 1000, expires: first.expires), status: 1))
            var moved = transaction(new, token, migrated, signed: migrated.purchase + 1000, originalPurchase: migrated.purchase)
            moved.set("previousOriginalTransactionId", old)
            lines.append(try notification("MIGRATION", nil, signed: migrated.purchase + 1000, transaction: moved,
                renewal: renewal(new, token, product: monthly, autoRenew: true, signed: migrated.purchase + 1000, expires: migrated.expires), status: 1))
            lines.append(try notification("DID_RENEW", nil, signed: second.purchase + 1000,
                transaction: transaction(old, token, second, signed: second.purchase + 1000, originalPurchase: first.purchase),
                renewal: renewal(old, token, product: monthly, autoRenew: true, signed: second.purchase + 1000, expires: second.expires), status: 1))
            all.append(TimelineCustomer(name: "migrated", originalTransactionId: old, appAccountToken: token, expectedState: "migrated",
                                        expectedEntitled: false, expectedProductId: monthly, lines: lines, expectedEvents: ["granted", "migrated"]))
            // Its lines are the old purchase's timeline above (they must keep their order).
            all.append(TimelineCustomer(name: "migrated to", originalTransactionId: new, appAccountToken: token, expectedState: "active",
                                        expectedEntitled: true, expectedProductId: monthly, lines: [], expectedEvents: ["granted"]))
        }
        return all
    }
}
