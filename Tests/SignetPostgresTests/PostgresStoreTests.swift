import AppStoreModels
import Foundation
import SignetCore
import SignetPostgres
@testable import SignetState
import SignetStateTestSupport
import SignetTestSupport
import Synchronization
import Testing

/// What only the shared PostgreSQL store promises: migrations, the entitlements view,
/// several instances writing at once, outbox leases, and riding out a server restart.
@Suite(.enabled(if: PostgresServer.unavailableReason == nil, "PostgreSQL binaries missing: \(PostgresServer.unavailableReason ?? "")"))
struct PostgresStoreTests {
    typealias F = Fixture

    static func options(_ url: String) throws -> PostgresStoreOptions {
        var options = PostgresStoreOptions(url: try PostgresURL(url))
        options.lease = .seconds(2)
        options.outageTimeout = .seconds(60)
        return options
    }

    static func server() throws -> PostgresServer { try PostgresServer.shared.get() }

    /// Runs `count` copies of `body` on their own threads at once; returns their results.
    /// Waits without holding a cooperative thread (the bodies block on PostgreSQL).
    static func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> T) async throws -> [T] {
        let results = Mutex<[Int: Result<T, any Error>]>([:])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for index in 0..<count {
                Thread.detachNewThread {
                    let result = Result { try body(index) }
                    let finished = results.withLock { results in
                        results[index] = result
                        return results.count == count
                    }
                    if finished { done.resume() }
                }
            }
        }
        return try (0..<count).map { index in try results.withLock { $0[index] }!.get() }
    }

    @Test func urlParsingKeepsThePasswordOutOfMessages() throws {
        let url = try PostgresURL("postgres://signet:s3cr%40t@db.internal:6543/prod?sslmode=require")
        #expect(url.host == "db.internal")
        #expect(url.port == 6543)
        #expect(url.user == "signet")
        #expect(url.password == "s3cr@t")
        #expect(url.database == "prod")
        #expect(url.sslMode == .require)
        #expect(!url.redacted.contains("s3cr"))
        #expect(!"\(url)".contains("s3cr"))
        #expect(throws: PostgresStoreError.self) { try PostgresURL("postgres://db/prod?sslmode=sometimes") }
        #expect(throws: PostgresStoreError.self) { try PostgresURL("mysql://db/prod") }
    }

    @Test func anUnreachableServerFailsWithoutThePassword() throws {
        var options = try Self.options("postgres://signet:hunter2@127.0.0.1:1/none?sslmode=disable")
        options.outageTimeout = .milliseconds(300)
        do {
            _ = try PostgresStateStore(options: options)
            Issue.record("connecting to a closed port must fail")
        } catch {
            #expect(!"\(error)".contains("hunter2"))
            // The cause in words, not NIO's types and socket addresses.
            #expect("\(error)".hasSuffix("127.0.0.1:1/none?sslmode=disable: connection refused"), "\(error)")
            #expect(!"\(error)".contains("SingleConnectionFailure"), "\(error)")
        }
    }

    @Test func migrationsRunOnceWhenInstancesStartTogether() async throws {
        let server = try Self.server()
        let url = try server.makeDatabase()
        let options = try Self.options(url)
        let applied = try await Self.concurrently(4) { _ in try PostgresStateStore.migrate(options: options) }
        #expect(applied.flatMap { $0 } == PostgresMigrations.all.map(\.version), "each version once, in order")
        let database = PostgresServer.databaseName(url)
        #expect(try server.psql(database, "SELECT count(*) FROM signet_schema_migrations") == "\(PostgresMigrations.all.count)")
        // Opening stores (which migrate too) changes nothing further.
        let stores = try await Self.concurrently(3) { _ in try PostgresStateStore(options: options) }
        for store in stores { try store.close() }
        #expect(try PostgresStateStore.migrate(options: options).isEmpty)
        #expect(try server.psql(database, "SELECT max(version) FROM signet_schema_migrations") == "\(PostgresMigrations.latestVersion)")
    }

    @Test func aReaderOfAnOlderSchemaSaysToMigrate() async throws {
        let server = try Self.server()
        let url = try server.makeDatabase()
        try PostgresStateStore(options: Self.options(url)).close()
        let database = PostgresServer.databaseName(url)
        _ = try server.psql(database, "DELETE FROM signet_schema_migrations WHERE version = \(PostgresMigrations.latestVersion)")
        do {
            _ = try PostgresStateStore.openReadOnly(url: url)
            Issue.record("a reader of an older schema must refuse")
        } catch {
            #expect("\(error)".contains("older than this Signet reads (\(PostgresMigrations.latestVersion)); run `signet migrate`"), "\(error)")
        }
        // Recorded as applied again (as `signet migrate` would after its ALTERs): it reads.
        _ = try server.psql(database, "INSERT INTO signet_schema_migrations (version, summary) VALUES (\(PostgresMigrations.latestVersion), 'x')")
        try PostgresStateStore.openReadOnly(url: url).close()
    }

    @Test("migration 9 (issue 53): appAccountTokens in other spellings become canonical; two spellings of one customer's consent merge into the deciding entry")
    func appAccountTokensBecomeCanonical() async throws {
        let server = try Self.server()
        let url = try server.makeDatabase()
        let store = try PostgresStateStore(options: Self.options(url))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = try await StateHarness(store: store).run([F.notification(
            .subscribed, .initialBuy, uuid: "s", signed: now - F.day,
            transaction: F.transaction(otid: "2000", id: "2000", purchase: now - F.day, expires: now + 29 * F.day, signed: now - F.day),
            renewal: F.renewal(otid: "2000", signed: now - F.day))])
        try store.close()
        let database = PostgresServer.databaseName(url)
        func consent(_ spelled: String, _ consented: Bool, _ at: Int64) -> String {
            let record = #"{"appAccountToken":"\#(spelled)","at":\#(at),"by":"old","consented":\#(consented)}"#
            return "INSERT INTO signet_consumption_ledger (key, record) VALUES ('appAccountToken:\(spelled)', '\(record)');"
        }
        let (breach, tie) = ("aaaaaaaa-0000-4000-8000-00000000000a", "cccccccc-0000-4000-8000-00000000000c")
        _ = try server.psql(database, """
            UPDATE signet_subscriptions SET app_account_token = upper(app_account_token);
            DELETE FROM signet_schema_migrations WHERE version = 9;
            \(consent(breach, true, 100)) \(consent(breach.uppercased(), false, 200))
            \(consent(tie.uppercased(), true, 400)) \(consent("cCcccccc-0000-4000-8000-00000000000c", false, 400))
            \(consent("AaAaAaAa-0000-4000-8000-00000000000a", true, 150))
            INSERT INTO signet_consumption_requests (transaction_id, requested_at, status, due_at, record)
                VALUES ('q-empty', 100, 'pending', NULL, '{"transactionId":"q-empty","appAccountToken":"","requestedAt":100,"deadline":43200100,"receivedAt":100,"repeats":0,"status":"pending","attempts":0,"advancedCommerce":false}');
            """)
        #expect(try PostgresStateStore.migrate(options: Self.options(url)) == [9])
        let reader = try PostgresStateStore.openReadOnly(url: url)
        defer { try? reader.close() }
        let token = try #require(AppAccountToken("5B0F9A34-1111-4C3E-9A0E-3C1C1F0B9D01"))
        #expect(try reader.subscriptions(appAccountToken: token).map(\.originalTransactionId) == ["2000"])
        #expect(try server.psql(database, "SELECT DISTINCT app_account_token FROM signet_subscriptions") == token.description)
        func decided(_ text: String) throws -> ConsumptionConsent? { try reader.consumptionConsent(.appAccountToken(try #require(AppAccountToken(text)))) }
        #expect(try decided(breach)?.consented == false, "the later withdrawal stands")
        #expect(try decided(tie).map { ($0.consented, $0.at) } ?? (true, 0) == (false, 400))
        #expect(try server.psql(database, "SELECT count(*) FROM signet_consumption_ledger") == "2")
        // A refund question stored with a token that is no UUID reads back without it.
        let requests = try reader.consumptionRequests(requestedSince: 0, limit: 10)
        #expect(requests.map(\.transactionId) == ["q-empty"] && requests.first?.appAccountToken == nil, "\(requests)")
    }

    @Test func theEntitlementsViewAnswersAsOfNowWithAnIndexedQuery() async throws {
        let server = try Self.server()
        let url = try server.makeDatabase()
        let store = try PostgresStateStore(options: Self.options(url))
        defer { try? store.close() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let current = F.notification(
            .subscribed, .initialBuy, uuid: "cur", signed: now - F.day,
            transaction: F.transaction(otid: "2000", id: "2000", purchase: now - F.day, expires: now + 29 * F.day, signed: now - F.day, token: "AC000000-0000-4000-8000-000000000001"),
            renewal: F.renewal(otid: "2000", signed: now - F.day))
        let lapsed = F.notification(
            .subscribed, .initialBuy, uuid: "old", signed: now - 40 * F.day,
            transaction: F.transaction(otid: "3000", id: "3000", purchase: now - 40 * F.day, expires: now - 10 * F.day,
                                       signed: now - 40 * F.day, token: "AC000000-0000-4000-8000-000000000001"),
            renewal: F.renewal(otid: "3000", signed: now - 40 * F.day))
        _ = try await StateHarness(store: store).run([current, lapsed])
        // The stored row of 3000 still says active (as of its last notification); the view says expired now.
        #expect(try store.subscription(originalTransactionId: "3000")?.state == .active)
        let database = PostgresServer.databaseName(url)
        let rows = try server.psql(database, """
            SELECT original_transaction_id, product_id, state, entitled, ownership, expires_date IS NOT NULL
            FROM signet_entitlements WHERE app_account_token = 'ac000000-0000-4000-8000-000000000001' ORDER BY original_transaction_id
            """)
        #expect(rows == "2000|pro.monthly|active|t|PURCHASED|t\n3000|pro.monthly|expired|f|PURCHASED|t")
        let plan = try server.psql(database, """
            SET enable_seqscan = off;
            EXPLAIN SELECT entitled FROM signet_entitlements WHERE app_account_token = 'ac000000-0000-4000-8000-000000000001' AND product_id = 'pro.monthly'
            """)
        #expect(plan.contains("signet_subscriptions_app_account_token"), "plan: \(plan)")

        // Entitlement names: the view carries them, and "has this user pro?" is the documented
        // query: true, false for an account whose only pro lapsed, false (not NULL) for none.
        try store.replaceEntitlementNames(EntitlementNames(["pro": ["pro.monthly"], "other": ["other.product"]]))
        #expect(try server.psql(database, """
            SELECT original_transaction_id, entitlements FROM signet_entitlements
            WHERE app_account_token = 'ac000000-0000-4000-8000-000000000001' ORDER BY original_transaction_id
            """) == "2000|{pro}\n3000|{pro}")
        func hasPro(_ account: String) throws -> String {
            try server.psql(database, """
                SELECT coalesce(bool_or(entitled), false) FROM signet_entitlements
                WHERE app_account_token = '\(account)' AND 'pro' = ANY(entitlements)
                """)
        }
        #expect(try hasPro("ac000000-0000-4000-8000-000000000001") == "t")
        #expect(try hasPro("acct-unknown") == "f")
        try store.replaceEntitlementNames(EntitlementNames(["pro": ["pro.yearly"]]))
        #expect(try hasPro("ac000000-0000-4000-8000-000000000001") == "f", "the view follows the stored mapping at once")
    }

    @Test func concurrentWritersLoseNoUpdate() async throws {
        let url = try Self.server().makeDatabase()
        let options = try Self.options(url)
        let writers = 4, rounds = 40, subscriptions = 3
        let stores = try (0..<writers).map { _ in try PostgresStateStore(options: options) }
        defer { for store in stores { try? store.close() } }
        // Every round bumps a counter (evaluatedAt) on every subscription, in a different
        // order per writer (so batches also deadlock and retry), and records one event.
        _ = try await Self.concurrently(writers) { writer in
            for round in 0..<rounds {
                try stores[writer].withTransaction { transaction in
                    let order = writer % 2 == 0 ? Array(0..<subscriptions) : Array((0..<subscriptions).reversed())
                    for index in order {
                        let id = "sub-\(index)"
                        var snapshot = try transaction.subscription(originalTransactionId: id)
                            ?? SubscriptionSnapshot(originalTransactionId: id, state: .active, entitled: true, evaluatedAt: 0)
                        snapshot.evaluatedAt += 1
                        try transaction.save(snapshot)
                    }
                    let key = "w\(writer)-r\(round)"
                    try transaction.recordKey(key, seenAt: 1)
                    var event = EntitlementEvent(eventId: key, type: .granted, entitled: true, source: .notification)
                    event.originalTransactionId = "sub-0"
                    _ = try transaction.appendEvent(event, payload: Array(key.utf8), inputKey: key, createdAt: 1)
                }
            }
        }
        for index in 0..<subscriptions {
            #expect(try stores[0].subscription(originalTransactionId: "sub-\(index)")?.evaluatedAt == Int64(writers * rounds))
        }
        // Counted in SQL: each live writer holds the lease on its own outbox rows, so one
        // store's undeliveredEvents() sees only its own.
        let database = PostgresServer.databaseName(url)
        #expect(try Self.server().psql(database, "SELECT count(*), count(DISTINCT event_id) FROM signet_outbox") == "\(writers * rounds)|\(writers * rounds)")
        #expect(try stores[1].undeliveredEvents().count == rounds)
    }

    /// What the transition stage does: it announces a batch's purchases first, and the store
    /// locks them in one order, so opposite orders inside the batches never deadlock.
    @Test func batchesThatPrefetchNeverDeadlock() async throws {
        let server = try Self.server()
        let url = try server.makeDatabase()
        let options = try Self.options(url)
        let writers = 4, rounds = 25, subscriptions = 4
        let stores = try (0..<writers).map { _ in try PostgresStateStore(options: options) }
        _ = try await Self.concurrently(writers) { writer in
            for _ in 0..<rounds {
                try stores[writer].withTransaction { transaction in
                    let ids = (0..<subscriptions).map { "sub-\($0)" }
                    let order = writer % 2 == 0 ? ids : ids.reversed()
                    try transaction.prefetch(keys: [], originalTransactionIds: order)
                    for id in order {
                        var snapshot = try transaction.subscription(originalTransactionId: id)
                            ?? SubscriptionSnapshot(originalTransactionId: id, state: .active, entitled: true, evaluatedAt: 0)
                        snapshot.evaluatedAt += 1
                        try transaction.save(snapshot)
                    }
                }
            }
        }
        for store in stores { try store.close() }  // a backend flushes its statistics when it ends
        let database = PostgresServer.databaseName(url)
        let check = try PostgresStateStore.openReadOnly(url: url)
        defer { try? check.close() }
        for index in 0..<subscriptions {
            #expect(try check.subscription(originalTransactionId: "sub-\(index)")?.evaluatedAt == Int64(writers * rounds))
        }
        #expect(try server.psql(database, "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()") == "0")
    }

    @Test func dedupeIsExactAcrossInstances() async throws {
        let url = try Self.server().makeDatabase()
        let options = try Self.options(url)
        let stores = try (0..<4).map { _ in try PostgresStateStore(options: options) }
        defer { for store in stores { try? store.close() } }
        // Every instance sees the same 30 inputs at once; each must be applied exactly once.
        let applied = try await Self.concurrently(stores.count) { writer in
            var mine: [String] = []
            for index in 0..<30 {
                let key = "n:\(index)"
                let fresh = try stores[writer].withTransaction { transaction -> Bool in
                    guard try !transaction.containsKey(key) else { return false }
                    try transaction.recordKey(key, seenAt: 1)
                    return true
                }
                if fresh { mine.append(key) }
            }
            return mine
        }
        let all = applied.flatMap { $0 }
        #expect(all.count == 30)
        #expect(Set(all).count == 30)
    }

    /// `pool_size` connections, no more, each lent to one call at a time: with one, a call
    /// waits for the open batch; with three, three batches are open at once and a fourth waits.
    @Test(arguments: [1, 3])
    func poolSizeBoundsTheConnectionsCallsShare(poolSize: Int) async throws {
        let url = try Self.server().makeDatabase()
        var options = try Self.options(url)
        options.poolSize = poolSize
        let store = try PostgresStateStore(options: options)
        defer { try? store.close() }
        struct Gate { var inside = 0, most = 0, released = false }
        let gate = Mutex(Gate())
        let seen = Mutex<(inside: Int, connections: String)?>(nil)
        Thread.detachNewThread {
            // Once `poolSize` transactions are open, give a waiting fourth time to get in (it must not).
            let deadline = Date().addingTimeInterval(60)
            while gate.withLock({ $0.inside }) < poolSize, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            Thread.sleep(forTimeInterval: 0.5)
            let connections = (try? Self.server().psql(
                PostgresServer.databaseName(url),
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'signet' AND datname = current_database()"))
            seen.withLock { $0 = (gate.withLock { $0.inside }, connections ?? "?") }
            gate.withLock { $0.released = true }
        }
        _ = try await Self.concurrently(4) { index in
            try store.withTransaction { transaction in
                gate.withLock {
                    $0.inside += 1
                    $0.most = max($0.most, $0.inside)
                }
                while !gate.withLock({ $0.released }) { Thread.sleep(forTimeInterval: 0.01) }
                try transaction.recordKey("pool-\(index)", seenAt: 1)
                gate.withLock { $0.inside -= 1 }
            }
        }
        #expect(seen.withLock { $0?.inside } == poolSize)
        #expect(seen.withLock { $0?.connections } == String(poolSize))
        #expect(gate.withLock { $0.most } == poolSize)
        #expect(try store.containedKeys((0..<4).map { "pool-\($0)" }).count == 4)
    }

    @Test func anotherInstanceRedeliversOnlyOnceTheOwnerIsGone() async throws {
        let url = try Self.server().makeDatabase()
        let options = try Self.options(url)
        let first = try PostgresStateStore(options: options)
        let harness = StateHarness(store: first)
        let unacked = try await harness.run([Table.subscribed], acknowledge: false)
        #expect(unacked.events.map(\.type) == ["granted"])

        let second = try PostgresStateStore(options: options)
        defer { try? second.close() }
        let other = StateHarness(store: second)
        // Longer than the lease: the first instance renews it, so its rows stay its own.
        try await Task.sleep(for: .seconds(3))
        #expect(try second.undeliveredEvents().isEmpty)
        // The same input reaches the second instance (a rebalance): it waits for the owner,
        // which goes away; then the second instance delivers the first one's events.
        let closer = Task.detached {
            try await Task.sleep(for: .seconds(1))
            try first.close()
        }
        let retry = try await other.run([Table.subscribed])
        try await closer.value
        #expect(retry.events.map(\.bytes) == unacked.events.map(\.bytes))
        #expect(try second.undeliveredEvents().isEmpty)
        #expect(try await other.run([Table.subscribed]).dropped == 1)
    }

    @Test func aServerNotUpYetAtStartIsWaitedFor() async throws {
        let server = try PostgresServer.launch()
        defer { try? server.stop() }
        let options = try Self.options(try server.makeDatabase())
        try server.stop()
        // The database comes up two seconds after the store started opening (a service
        // started before its database): the open waits, migrates and works.
        let restartFailure = Mutex<String?>(nil)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 2)
            do { try server.start() } catch { restartFailure.withLock { $0 = "\(error)" } }
        }
        let started = ContinuousClock.now
        let store = try await Self.concurrently(1) { _ in try PostgresStateStore(options: options) }[0]
        defer { try? store.close() }
        #expect(restartFailure.withLock { $0 } == nil)
        #expect(ContinuousClock.now - started >= .seconds(1), "the open cannot have succeeded before the server was up")
        #expect(try await StateHarness(store: store).run([Table.subscribed]).events.map(\.type) == ["granted"])

        // A login the server refuses is not an outage: it fails at once, not after outage_timeout.
        var wrongDatabase = options
        wrongDatabase.url = try PostgresURL(server.url("no_such_database"))
        let refusedAt = ContinuousClock.now
        #expect(throws: (any Error).self) { try PostgresStateStore(options: wrongDatabase) }
        #expect(ContinuousClock.now - refusedAt < .seconds(30))
    }

    @Test func aServerRestartMidRunLosesNothing() async throws {
        let server = try PostgresServer.launch()
        defer { try? server.stop() }
        let options = try Self.options(try server.makeDatabase())
        let store = try PostgresStateStore(options: options)
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        #expect(try await harness.run([Table.subscribed]).events.map(\.type) == ["granted"])
        try server.stop()
        // The database comes back while the next batch is waiting for it. A plain thread, not
        // a Task: the batch below blocks its cooperative thread while it retries, and other
        // tests may hold the rest of the pool.
        let readyDuringOutage = Mutex<Bool?>(nil)
        let restartFailure = Mutex<String?>(nil)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 2)
            // Meanwhile the batch is retrying: readiness (containedKeys([])) reports the outage.
            readyDuringOutage.withLock { $0 = (try? store.containedKeys([])) != nil }
            do { try server.start() } catch { restartFailure.withLock { $0 = "\(error)" } }
        }
        let during = try await harness.run([Table.disabled, Table.expiredVoluntary])
        #expect(restartFailure.withLock { $0 } == nil)
        #expect(readyDuringOutage.withLock { $0 } == false, "readiness stayed true while PostgreSQL was down")
        #expect(try store.containedKeys([]).isEmpty, "readiness is true again once a call succeeded")
        #expect(during.events.map(\.type) == ["auto_renew_disabled", "expired"])
        #expect(try store.subscription(originalTransactionId: "1000")?.state == .expired)
        #expect(try store.undeliveredEvents().isEmpty)
        #expect(try await harness.run([Table.disabled]).dropped == 1)
    }
}
