import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetAppStorePipeline
import SignetCore
import SignetFixtures
import SignetTestSupport
import Synchronization
import Testing

/// The `appstore_statuses` source in process, against the fake: one record per subscription
/// Apple lists, ids asked about concurrently but within the rate limit, unknown ids skipped,
/// and a checkpoint that counts an id done only once its records are committed.
@Suite("appstore_statuses source")
struct AppStoreStatusSourceTests {
    @Test("every id asked once, several at a time within the client's rate; one record per status; unknown ids skipped; done only after commit")
    func statusesWithinTheRate() async throws {
        try await withFakeAPI(client: { try $0.client($1, requestsPerSecond: 10) }) { fake, client in
            let samples = APITestBed.samples.filter { $0.signedTransaction != nil && $0.sample.originalTransactionId != nil }
            var seen: Set<String> = []
            let purchases = Array(samples.filter { seen.insert($0.sample.originalTransactionId!).inserted }.prefix(20))
            try #require(purchases.count >= 10)
            fake.addTransactions(purchases.map {
                FakeAppStoreAPI.StoredTransaction(
                    transactionId: $0.sample.transactionId ?? $0.sample.originalTransactionId!,
                    originalTransactionId: $0.sample.originalTransactionId!, signedTransactionInfo: $0.signedTransaction!)
            })
            fake.setResponseDelay(.milliseconds(100))
            let directory = try TemporaryDirectory(prefix: "signet-statuses")
            defer { directory.remove() }
            let ids = purchases.map { $0.sample.originalTransactionId! } + ["unknown-1"]
            let checkpoint = directory.path("reconcile.json")
            let source = AppStoreStatusSource(options: .init(ids: ids, checkpointPath: checkpoint)) { client }
            try await source.open()
            var lines: [[String: Any]] = []
            var first = true
            while let records = try await source.nextBatch(maxRecords: 5) {
                lines += records.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.raw))) as? [String: Any] }
                if first {
                    // Handed out, not committed: nothing is done yet.
                    #expect(source.progress?.done == 0)
                    first = false
                }
                try await source.commit(records.map(\.position))
            }
            let progress = try #require(source.progress)
            try await source.close()
            #expect(progress.finished && progress.done == ids.count && progress.notFound == 1 && progress.statuses == purchases.count)
            #expect(try AppStoreStatusCheckpoint.load(checkpoint)?.done == ids.count)
            #expect(lines.compactMap { $0["originalTransactionId"] as? String }.sorted() == ids.dropLast().sorted())
            #expect(lines.allSatisfy { $0["signedTransactionInfo"] is String && $0["status"] as? Int == 1 })

            let requests = fake.requests(.subscriptionStatuses)
            // Each id once; a loaded machine may see one transport-level retry (a pooled connection
            // the server closed as it was reused), never an id asked again after its answer.
            var asked: [String: Int] = [:]
            for request in requests { asked[request.pathParameter ?? "", default: 0] += 1 }
            #expect(Set(asked.keys) == Set(ids), "every id asked: \(asked)")
            #expect(requests.count <= ids.count + 1 && asked.values.allSatisfy { $0 <= 2 }, "each id once: \(asked)")
            let overlapping = zip(requests, requests.dropFirst()).contains { $1.arrival - $0.arrival < .milliseconds(100) }
            #expect(overlapping, "the ids were asked about one after the other")
            // 10 a second: the fake never sees a second with (many) more, whatever the parallelism.
            let arrivals = requests.map(\.arrival).sorted()
            for (index, start) in arrivals.enumerated() {
                let inWindow = arrivals[index...].prefix { $0 - start < .seconds(1) }.count
                #expect(inWindow <= 13, "\(inWindow) requests within 1 s from arrival \(index)")
            }
        }
    }

    @Test("a checkpoint edited into counts that are not counts of ids is refused as unreadable, never followed")
    func editedCheckpointIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "signet-statuses")
        defer { directory.remove() }
        let path = directory.path("reconcile.json")
        var checkpoint = AppStoreStatusCheckpoint(ids: ["1", "2", "3"], environment: "Sandbox", bundleId: "com.example.signet")
        checkpoint.done = 2
        try checkpoint.save(to: path)
        #expect(try AppStoreStatusCheckpoint.load(path)?.done == 2)
        for done in [-5, 4, Int.min, Int.max] {
            checkpoint.done = done
            try checkpoint.save(to: path)
            #expect(throws: SourceError.self, "done \(done)") { try AppStoreStatusCheckpoint.load(path) }
        }
    }

    @Test("a paged list (reconcile --all) is read a page at a time: every id asked once, the checkpoint the same as for the whole list, a restart resumes after the last id done")
    func pagedListResumes() async throws {
        let bed = try APITestBed()
        try await withFakeAPI(bed: bed) { fake, _ in
            let directory = try TemporaryDirectory(prefix: "signet-statuses")
            defer { directory.remove() }
            let checkpointPath = directory.path("reconcile.json")
            // Ids Apple does not know: each answered at once (4040010), done without a record.
            let stored = Mutex((1...10).map { "2000000000000\($0 + 100)" })
            let reads = Mutex<[String?]>([])
            let shrinkAfterCount = Mutex(false)
            let pages = PurchaseIDPages(pageSize: 3) { after, limit in
                reads.withLock { $0.append(after) }
                // The count ended (its last, short page); the run's reads see 5 fewer ids.
                if after != nil, shrinkAfterCount.withLock({ $0 }), stored.withLock({ $0.filter { $0 > after! }.count }) < limit {
                    shrinkAfterCount.withLock { $0 = false }
                    let page = Array(stored.withLock { ids in ids.filter { $0 > after! } }.prefix(limit))
                    stored.withLock { $0.removeLast(5) }
                    return page
                }
                return Array(stored.withLock { ids in ids.filter { after == nil || $0 > after! } }.prefix(limit))
            }
            func run(stopAfter: Int? = nil) async throws -> (asked: [String], progress: AppStoreStatusSource.Progress) {
                let before = Set(fake.requests(.subscriptionStatuses).map(\.arrival))
                var options = AppStoreStatusSource.Options(ids: [], checkpointPath: checkpointPath)
                options.idPages = pages
                options.parallelism = 2
                let source = AppStoreStatusSource(options: options) { try bed.client(fake) }
                try await source.open()
                while let records = try await source.nextBatch(maxRecords: 5) {
                    try await source.commit(records.map(\.position))
                    if let stopAfter, (source.progress?.done ?? 0) >= stopAfter { break }
                }
                let progress = try #require(source.progress)
                try await source.close()
                let asked = fake.requests(.subscriptionStatuses).filter { !before.contains($0.arrival) }.compactMap(\.pathParameter)
                return (asked, progress)
            }

            let all = stored.withLock { $0 }
            let full = try await run()
            #expect(full.progress.finished && full.progress.total == 10 && full.progress.done == 10 && full.progress.notFound == 10)
            #expect(full.asked.sorted() == all, "every id once: \(full.asked)")
            // Counted a page at a time at open, then read a page at a time as it went: never the whole list.
            let firstReads = reads.withLock { $0 }
            #expect(firstReads.filter { $0 == nil }.count == 2 && firstReads.count >= 8, "\(firstReads)")
            #expect(try AppStoreStatusCheckpoint.load(checkpointPath)?.listDigest == AppStoreStatusCheckpoint.digest(all))

            // A run stopped after 4 of the same list (as kill -9 leaves it): the restart asks only
            // the ids after the last one done, reading from there.
            var checkpoint = AppStoreStatusCheckpoint(
                listDigest: AppStoreStatusCheckpoint.digest(all), total: all.count, environment: "Sandbox", bundleId: APITestBed.bundleId)
            checkpoint.ascending = true
            checkpoint.done = 4
            checkpoint.lastDone = all[3]
            try checkpoint.save(to: checkpointPath)
            reads.withLock { $0 = [] }
            let resumed = try await run()
            #expect(resumed.progress.finished && resumed.progress.resumed && resumed.progress.doneAtStart == 4)
            #expect(resumed.asked.sorted() == Array(all[4...]), "\(resumed.asked)")
            #expect(reads.withLock { $0 }.contains(all[3]), "the pages after the last id done were read from it")

            // The store gained purchases since (one before the last id done, one after): the list
            // differs, so it resumes after the last id done, counting the new one before it as done.
            try checkpoint.save(to: checkpointPath)
            stored.withLock { ids in ids = (ids + ["2000000000000000", "2000000000000999"]).sorted() }
            let grown = try await run()
            #expect(grown.progress.finished && grown.progress.total == 12 && grown.progress.doneAtStart == 5)
            #expect(grown.asked.sorted() == stored.withLock { $0 }.filter { $0 > all[3] }, "\(grown.asked)")

            // Purchases deleted between the count and the reading: the list ends where the store
            // does, and the run finishes instead of waiting for ids that are gone.
            try FileManager.default.removeItem(atPath: checkpointPath)
            let counted = stored.withLock { $0 }
            shrinkAfterCount.withLock { $0 = true }
            let shrunk = try await run()
            #expect(shrunk.progress.finished && shrunk.progress.total == counted.count - 5, "\(shrunk.progress)")
            #expect(shrunk.asked.sorted() == Array(counted.dropLast(5)), "\(shrunk.asked)")
        }
    }
}
