import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetOpenSSL
import SignetTestSupport
import Testing

/// `signet reconcile` (the binary) against the fake App Store Server API: seeding purchases
/// Signet never saw, then Apple's view changing in every way a status can, then nothing.
@Suite(
    "signet reconcile: Apple's current view, applied (the binary, a fake App Store Server API)", .tags(.endToEnd), .serialized,
    .timeLimit(.minutes(10)))
struct ReconcileCLIEndToEndTests {
    static let bundleId = "com.example.signet"
    static let keyId = "RECONCILE1"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let day: Int64 = 86_400_000

    /// A fake holding signed statuses, the PKI that signed them, and the binary's environment.
    struct Bed {
        let directory: TemporaryDirectory
        let fake: FakeAppStoreAPI
        let signer: JWSSigner
        let environment: [String: String]

        static func make() async throws -> Bed {
            let directory = try TemporaryDirectory(prefix: "signet-reconcile")
            let pki = try TestPKI()
            let root = directory.path("root.pem")
            try pki.rootPEM.write(toFile: root, atomically: true, encoding: .utf8)
            let key = try ECPrivateKey(generating: .p256)
            let keyFile = directory.path("AuthKey_\(keyId).p8")
            try key.pemEncoded.write(toFile: keyFile, atomically: true, encoding: .utf8)
            let check = FakeAppStoreAPIJWTCheck(keyId: keyId, issuerId: issuerId, bundleId: bundleId, publicKey: try key.publicKey)
            let fake = try await FakeAppStoreAPI.start(environment: .sandbox, jwtCheck: check)
            let environment = [
                "SIGNET_ROOT_CERTS": root, "SIGNET_ENVIRONMENT": "Sandbox", "SIGNET_BUNDLE_ID": bundleId,
                "SIGNET_APPSTORE_KEY_ID": keyId, "SIGNET_APPSTORE_ISSUER_ID": issuerId, "SIGNET_APPSTORE_PRIVATE_KEY": keyFile,
                "SIGNET_APPSTORE_API_URL": fake.baseURL, "SIGNET_DATA_DIR": directory.path("data"),
            ]
            return Bed(directory: directory, fake: fake, signer: pki.signer, environment: environment)
        }

        /// Apple's status of purchase `otid` as of `signed`: its transaction `id` (bought at
        /// `purchase`, ending at `expires`) and renewal info.
        func status(
            _ otid: String, id: String, purchase: Int64, expires: Int64, signed: Int64, status: Int = 1, revoked: Int64? = nil,
            autoRenew: Bool = true, billingRetry: Bool = false, graceEnds: Int64? = nil
        ) throws -> FakeAppStoreAPI.StoredTransaction {
            var transaction: [String: Any] = [
                "transactionId": id, "originalTransactionId": otid, "bundleId": ReconcileCLIEndToEndTests.bundleId,
                "productId": "pro.monthly", "purchaseDate": purchase, "originalPurchaseDate": purchase, "expiresDate": expires,
                "quantity": 1, "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": signed,
                "environment": "Sandbox", "transactionReason": "PURCHASE",
            ]
            if let revoked {
                transaction["revocationDate"] = revoked
                transaction["revocationReason"] = 0
                transaction["revocationType"] = "REFUND_FULL"
            }
            var renewal: [String: Any] = [
                "originalTransactionId": otid, "autoRenewProductId": "pro.monthly", "productId": "pro.monthly",
                "autoRenewStatus": autoRenew ? 1 : 0, "isInBillingRetryPeriod": billingRetry, "signedDate": signed,
                "environment": "Sandbox", "renewalDate": expires,
            ]
            if let graceEnds { renewal["gracePeriodExpiresDate"] = graceEnds }
            if !autoRenew { renewal["expirationIntent"] = 1 }
            func sign(_ object: [String: Any]) throws -> String {
                try signer.sign(payload: Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
            }
            return FakeAppStoreAPI.StoredTransaction(
                transactionId: id, originalTransactionId: otid, signedTransactionInfo: try sign(transaction),
                signedRenewalInfo: try sign(renewal), status: status)
        }

        func reconcile(_ arguments: [String]) async throws -> SignetProcess.Result {
            let result = try await SignetProcess.output(["reconcile"] + arguments, environment: environment, timeout: 120)
            if result.exitCode == -1 { throw FakeAppStoreAPIError("signet reconcile timed out: \(result.stderr)") }
            return result
        }

        func tearDown() async {
            await fake.stop()
            directory.remove()
        }
    }

    /// Event types by purchase, from NDJSON events.
    static func events(_ text: String) -> [String: [String]] {
        var types: [String: [String]] = [:]
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let otid = object["originalTransactionId"] as? String, let type = object["type"] as? String
            else { continue }
            types[otid, default: []].append(type)
            #expect(object["source"] as? String == "subscription_status")
        }
        return types
    }

    @Test("--file seeds purchases never seen; each change of Apple's view is its event, an unchanged one none; a second reconcile emits nothing; an unknown id is skipped")
    func seedThenReconcile() async throws {
        let bed = try await Bed.make()
        do {
            try await seedThenReconcile(bed)
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    func seedThenReconcile(_ bed: Bed) async throws {
        let day = Self.day
        let now = WallClock.milliseconds()
        let start = now - 20 * day, end = now + 10 * day
        let purchases = ["1001", "1002", "1003", "1004", "1005", "1006"]
        bed.fake.addTransactions(try purchases.map {
            try bed.status($0, id: $0, purchase: start, expires: end, signed: now - 10 * day)
        })
        let list = bed.directory.path("purchases.txt")
        try "# exported from the app's database\n\(purchases.joined(separator: "\n"))\n9999\n1001\n".write(toFile: list, atomically: true, encoding: .utf8)

        let seeded = try await bed.reconcile(["--file", list])
        #expect(seeded.exitCode == 0, "\(seeded.stderr)")
        let granted = Self.events(seeded.stdoutText)
        #expect(granted == Dictionary(uniqueKeysWithValues: purchases.map { ($0, ["granted"]) }), "\(seeded.stdoutText)")
        #expect(seeded.stderr.contains("7/7 purchases") && seeded.stderr.contains("1 unknown to Apple"), "\(seeded.stderr)")

        // Apple's view moves on: a renewal, a refund, an expiry, a grace period, billing retry; 1006 stays.
        let signed = now - 1000
        bed.fake.addTransactions([
            try bed.status("1001", id: "2001", purchase: end - 2 * day, expires: end + 28 * day, signed: signed),
            try bed.status("1002", id: "1002", purchase: start, expires: end, signed: signed, status: 5, revoked: now - 2 * day),
            try bed.status("1003", id: "1003", purchase: start, expires: now - day, signed: signed, status: 2, autoRenew: false),
            try bed.status("1004", id: "1004", purchase: start, expires: now - day, signed: signed, status: 4, billingRetry: true, graceEnds: now + 5 * day),
            try bed.status("1005", id: "1005", purchase: start, expires: now - day, signed: signed, status: 3, billingRetry: true),
            try bed.status("1006", id: "1006", purchase: start, expires: end, signed: signed),
        ])
        let changed = try await bed.reconcile(["--file", list])
        #expect(changed.exitCode == 0, "\(changed.stderr)")
        let events = Self.events(changed.stdoutText)
        #expect(events["1001"] == ["renewed"])
        #expect(events["1002"] == ["refunded"])
        #expect(events["1003"] == ["expired", "auto_renew_disabled"])
        #expect(events["1004"] == ["grace_period_entered"])
        #expect(events["1005"] == ["billing_retry_entered"])
        #expect(events["1006"] == nil)

        let again = try await bed.reconcile(["--original-transaction-id", "1001", "--original-transaction-id", "1002", "--file", list])
        #expect(again.exitCode == 0, "\(again.stderr)")
        #expect(again.stdoutText.isEmpty, "a second reconcile emitted: \(again.stdoutText)")
        // --all walks the store: the six purchases (not the unknown id), all in agreement now.
        let all = try await bed.reconcile(["--all"])
        #expect(all.exitCode == 0, "\(all.stderr)")
        #expect(all.stdoutText.isEmpty, "--all emitted: \(all.stdoutText)")
        #expect(all.stderr.contains("6/6 purchases"), "\(all.stderr)")
        // The same through the store's pages, two ids at a time: each purchase asked once more.
        let before = bed.fake.requests(.subscriptionStatuses).count
        let paged = try await bed.reconcile(["--all", "--page-size", "2", "--restart"])
        #expect(paged.exitCode == 0, "\(paged.stderr)")
        #expect(paged.stdoutText.isEmpty, "--all emitted: \(paged.stdoutText)")
        #expect(paged.stderr.contains("6/6 purchases"), "\(paged.stderr)")
        let pagedAsked = bed.fake.requests(.subscriptionStatuses).dropFirst(before).compactMap(\.pathParameter)
        #expect(pagedAsked.sorted() == ["1001", "1002", "1003", "1004", "1005", "1006"], "\(pagedAsked)")
        // Every request went out with a JWT the fake accepted.
        #expect(bed.fake.requests(.subscriptionStatuses).allSatisfy { $0.authRefusal == nil })
    }

    @Test("one id of a customer brings every subscription Apple lists for it, groups and items in any order: each purchase seeded once")
    func everyGroupOfACustomer() async throws {
        let bed = try await Bed.make()
        do {
            let now = WallClock.milliseconds()
            let purchases = ["4001", "4002", "4003"]
            bed.fake.addTransactions(try purchases.map {
                try bed.status($0, id: $0, purchase: now - 2 * Self.day, expires: now + 28 * Self.day, signed: now - 1000)
            })
            bed.fake.linkPurchases(["pro": ["4001", "4002"], "extras": ["4003"]])
            let seeded = try await bed.reconcile(["--original-transaction-id", "4002"])
            #expect(seeded.exitCode == 0, "\(seeded.stderr)")
            #expect(Self.events(seeded.stdoutText) == ["4001": ["granted"], "4002": ["granted"], "4003": ["granted"]])
            #expect(seeded.stderr.contains("1/1 purchases, 3 statuses"), "\(seeded.stderr)")
            // Asked again through another of them: the same answer, in another order, and nothing to say.
            let again = try await bed.reconcile(["--original-transaction-id", "4003"])
            #expect(again.exitCode == 0 && again.stdoutText.isEmpty, "\(again.stdoutText)")
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    @Test("kill -9 in the middle of a reconcile: the same command resumes after the purchases done, and every purchase is granted with one event id")
    func killedReconcileResumes() async throws {
        let bed = try await Bed.make()
        do {
            let now = WallClock.milliseconds()
            let purchases = (0..<60).map { String(3000 + $0) }
            bed.fake.addTransactions(try purchases.map {
                try bed.status($0, id: $0, purchase: now - 5 * Self.day, expires: now + 25 * Self.day, signed: now - 1000)
            })
            let list = bed.directory.path("purchases.txt")
            try purchases.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
            bed.fake.setResponseDelay(.milliseconds(300))
            let child = try ChildProcess.signet(["reconcile", "--file", list], environment: bed.environment, stdin: false)
            let checkpoint = bed.environment["SIGNET_DATA_DIR"]! + "/reconcile.json"
            let midway = await child.waitUntil(timeout: .seconds(120)) {
                ((try? ReconcileCheckpointProbe.done(checkpoint)) ?? 0) >= 10 || !child.isRunning
            }
            #expect(midway && child.isRunning, "the reconcile ended before the kill: \(child.stderrTail())")
            child.send(SIGKILL)
            _ = await child.exit(within: .seconds(30))
            let requestsBefore = bed.fake.requests(.subscriptionStatuses).count
            bed.fake.setResponseDelay(.zero)

            let resumed = try await bed.reconcile(["--file", list])
            #expect(resumed.exitCode == 0, "\(resumed.stderr)")
            #expect(resumed.stderr.contains("resumed after"), "\(resumed.stderr)")
            let asked = bed.fake.requests(.subscriptionStatuses).count - requestsBefore
            #expect(asked < purchases.count, "the resumed run asked about \(asked) purchases again")
            // Granted once each: the first run's events and the resumed run's, by event id.
            var granted: [String: Set<String>] = [:]
            for line in (child.stdoutText + resumed.stdoutText).split(separator: "\n") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let otid = object["originalTransactionId"] as? String, let id = object["eventId"] as? String
                else { continue }
                #expect(object["type"] as? String == "granted")
                granted[otid, default: []].insert(id)
            }
            #expect(Set(granted.keys) == Set(purchases))
            #expect(granted.values.allSatisfy { $0.count == 1 }, "a purchase got two different events")
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    @Test("no purchases named is a usage error; a missing key variable is one line and exit 2")
    func usage() async throws {
        let bed = try await Bed.make()
        defer { bed.directory.remove() }
        let none = try await bed.reconcile([])
        #expect(none.exitCode == 64 || none.exitCode == 2, "\(none.exitCode) \(none.stderr)")
        #expect(none.stderr.contains("--original-transaction-id"))
        // --all before the store holds a purchase: one line saying so, exit 2, nothing asked.
        let empty = try await bed.reconcile(["--all"])
        #expect(empty.exitCode == 2, "\(empty.exitCode) \(empty.stderr)")
        #expect(empty.stderr.contains("no purchase in") || empty.stderr.contains("no state database"), "\(empty.stderr)")
        #expect(bed.fake.requests(.subscriptionStatuses).isEmpty)
        var environment = bed.environment
        environment["SIGNET_APPSTORE_KEY_ID"] = nil
        let missing = try await SignetProcess.output(["reconcile", "--original-transaction-id", "1"], environment: environment, timeout: 60)
        #expect(missing.exitCode == 2, "\(missing.stderr)")
        #expect(missing.stderr.contains("SIGNET_APPSTORE_KEY_ID"))
        await bed.fake.stop()
    }
}

/// Reads how many ids a reconcile checkpoint has done (nil while there is none).
enum ReconcileCheckpointProbe {
    static func done(_ path: String) throws -> Int? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["done"] as? Int
    }
}
