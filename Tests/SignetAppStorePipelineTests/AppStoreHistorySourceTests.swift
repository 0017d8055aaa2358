import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
@testable import SignetAppStorePipeline
import SignetCore
import SignetTestSupport
import Testing

/// The `appstore_history` source in process, against the fake: records, positions per
/// sub-window, and a checkpoint that records a page only once all its records committed.
@Suite("appstore_history source")
struct AppStoreHistorySourceTests {
    @Test("instants: durations before now, ISO-8601, UNIX ms; nothing else")
    func instants() {
        let now: Int64 = 1_800_000_000_000
        #expect(AppStoreHistoryWindow.instant("72h", now: now) == now - 72 * 3_600_000)
        #expect(AppStoreHistoryWindow.instant("30d", now: now) == now - 30 * 86_400_000)
        #expect(AppStoreHistoryWindow.instant("2026-11-01T00:00:00Z", now: now) == 1_793_491_200_000)
        #expect(AppStoreHistoryWindow.instant("2026-11-01", now: now) == 1_793_491_200_000)
        #expect(AppStoreHistoryWindow.instant("1793491200000", now: now) == 1_793_491_200_000)
        for bad in ["", "72", "h", "-3d", "yesterday", "2026-13-01", "99999999999999999999d"] {
            #expect(AppStoreHistoryWindow.instant(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test("split covers the window exactly")
    func split() {
        let window = AppStoreHistoryWindow(start: 1000, end: 1107)
        let parts = window.split(into: 4)
        #expect(parts.count == 4 && parts.first?.start == 1000 && parts.last?.end == 1107)
        #expect(zip(parts, parts.dropFirst()).allSatisfy { $0.end == $1.start })
        #expect(AppStoreHistoryWindow(start: 0, end: 3).split(into: 16).count == 3)
    }

    @Test("each history item becomes the webhook's body: a compact JWS as is, anything else escaped into valid JSON")
    func envelopes() throws {
        let jws = APITestBed.samples[0].signedPayload
        #expect(AppStoreHistorySource.envelope(jws) == Array(#"{"signedPayload":"\#(jws)"}"#.utf8))
        for odd in ["a\"b", "back\\slash", "tab\there", "caf\u{e9}", "\u{7f}", ""] {
            let object = try JSONSerialization.jsonObject(with: Data(AppStoreHistorySource.envelope(odd))) as? [String: String]
            #expect(object == ["signedPayload": odd], "\(odd.debugDescription)")
        }
    }

    @Test("a page is checkpointed only once every record of it committed; a new source resumes after it")
    func checkpointFollowsCommits() async throws {
        let bed = try APITestBed()
        let fake = try await bed.startFake()
        let directory = try TemporaryDirectory(prefix: "signet-history")
        defer { directory.remove() }
        do {
            fake.setPageSizes(notifications: 5)
            fake.addNotifications(APITestBed.history(12))
            let checkpointPath = directory.path("backfill.json")
            @Sendable func source() -> AppStoreHistorySource {
                var options = AppStoreHistorySource.Options(start: "2d", checkpointPath: checkpointPath)
                options.subWindows = 1
                // Every commit written at once, so the file shows each step.
                options.checkpointInterval = .zero
                return AppStoreHistorySource(options: options) { try bed.client(fake) }
            }

            let first = source()
            try await first.open()
            // Page 1 and two records of page 2 (pages arrive one at a time: read until seven).
            var batch: [Record] = []
            while batch.count < 7, let more = try await first.nextBatch(maxRecords: 7 - batch.count) { batch += more }
            try #require(batch.count == 7)
            #expect(batch.allSatisfy { $0.position.stream == AppStoreHistorySource.streamName(0) })
            #expect(batch.map(\.position.offset) == Array(0..<7))
            let record = try #require(JSONSerialization.jsonObject(with: Data(batch[0].raw)) as? [String: String])
            #expect(record == ["signedPayload": APITestBed.samples[0].signedPayload])

            // Four of the first page's five records: nothing recorded yet.
            try await first.commit(batch.prefix(4).map(\.position))
            #expect(try AppStoreHistoryCheckpoint.load(checkpointPath)?.pages == 0)
            // The fifth completes page 1; records 6 and 7 are a part of page 2 only.
            try await first.commit(batch[4..<7].map(\.position))
            let saved = try #require(try AppStoreHistoryCheckpoint.load(checkpointPath))
            #expect(saved.pages == 1 && saved.notifications == 5 && !saved.isFinished)
            #expect(saved.subWindows[0].paginationToken != nil)
            #expect(first.progress?.pagesCommitted == 1)
            // The first source's fetcher runs ahead (its buffer holds all three pages): let it ask
            // for the last one before closing. A request that close() cancels in flight may reach
            // the fake only after the count below is taken, and would be counted as the second
            // source's.
            let waitingSince = ContinuousClock.now
            while fake.requests(.notificationHistory).count < 3, ContinuousClock.now - waitingSince < .seconds(60) {
                try await Task.sleep(for: .milliseconds(20))
            }
            try #require(fake.requests(.notificationHistory).count == 3)
            try await first.close()

            // A crash here: the next source starts after page 1, and reads to the end.
            let requestsBefore = fake.requests(.notificationHistory).count
            let second = source()
            try await second.open()
            #expect(second.progress?.resumed == true)
            var payloads: [String] = []
            while let records = try await second.nextBatch(maxRecords: 100) {
                for record in records {
                    let object = try #require(JSONSerialization.jsonObject(with: Data(record.raw)) as? [String: String])
                    payloads.append(try #require(object["signedPayload"]))
                }
                try await second.commit(records.map(\.position))
            }
            try await second.close()
            // Which samples came (their index; a payload is ~19 KB, too long for a message).
            let indices = payloads.map { payload in APITestBed.samples.firstIndex { $0.signedPayload == payload } ?? -1 }
            #expect(indices == Array(5..<12))
            #expect(fake.requests(.notificationHistory).count - requestsBefore == 2)
            let done = try #require(try AppStoreHistoryCheckpoint.load(checkpointPath))
            #expect(done.isFinished && done.pages == 3 && done.notifications == 12)

            // Finished: the next open starts the configured window afresh.
            let third = source()
            try await third.open()
            #expect(third.progress?.resumed == false && third.progress?.pagesCommitted == 0)
            try await third.close()
        } catch {
            await fake.stop()
            throw error
        }
        await fake.stop()
    }

    @Test("a resumed checkpoint that aged past Apple's lookback: parts now beyond it are skipped with a warning, the part reaching into it clamped, the rest read; it finishes")
    func agedCheckpointResumes() async throws {
        try await withFakeAPI { fake, client in
            let day: Int64 = 86_400_000
            let now = APITestBed.nowMilliseconds()
            // Sandbox keeps 30 days. A 24-day window saved 15 days ago, in 4 parts of 6 days:
            // [-39, -33) is now beyond the lookback, [-33, -27) reaches into it, the others lie within.
            let window = AppStoreHistoryWindow(start: now - 39 * day, end: now - 15 * day)
            let checkpoint = AppStoreHistoryCheckpoint(
                window: window, onlyFailures: false, environment: "Sandbox", bundleId: APITestBed.bundleId,
                subWindowCount: 4, startedAt: now - 15 * day)
            #expect(checkpoint.subWindows.map(\.request.endDate) == [now - 33 * day, now - 27 * day, now - 21 * day, now - 15 * day])
            // Apple still has what is younger than 30 days: -28 (in the part that reaches into
            // the lookback) and -24, -18; -35 is gone (the fake never serves a start beyond it).
            let samples = Array(APITestBed.samples.prefix(4))
            fake.addNotifications(zip(samples, [35, 28, 24, 18]).map { $0.stored(sentDate: now - Int64($1) * day) })
            let directory = try TemporaryDirectory(prefix: "signet-history")
            defer { directory.remove() }
            let path = directory.path("backfill.json")
            try checkpoint.save(to: path)

            var options = AppStoreHistorySource.Options(start: "72h", checkpointPath: path)
            options.parallelism = 1
            let source = AppStoreHistorySource(options: options) { client }
            try await source.open()
            var payloads: [String] = []
            while let records = try await source.nextBatch(maxRecords: 10) {
                for record in records {
                    let object = try #require(JSONSerialization.jsonObject(with: Data(record.raw)) as? [String: String])
                    payloads.append(try #require(object["signedPayload"]))
                }
                try await source.commit(records.map(\.position))
            }
            try await source.close()
            #expect(payloads == samples.suffix(3).map(\.signedPayload))
            let done = try #require(try AppStoreHistoryCheckpoint.load(path))
            #expect(done.isFinished, "\(done.subWindows.map(\.done))")
            #expect(done.window == window, "the resumed window is the saved one, not the configured 72h")
            // The part beyond got one 4000012 and nothing else; no request started beyond the lookback successfully.
            let requests = fake.requests(.notificationHistory)
            let refused = requests.filter { $0.status == 400 }
            #expect((1...2).contains(refused.count), "the part beyond, and the part reaching into the lookback before it was clamped")
            #expect(requests.filter { $0.status == 200 }.allSatisfy { (($0.jsonBody?["startDate"] as? NSNumber)?.int64Value ?? 0) > now - 30 * day })
        }
    }

    @Test("4000012 for a part that ends inside the lookback never marks it done: the run fails with a clear error, and the next run fetches it")
    func refusedPartInsideLookbackIsNotDone() async throws {
        let bed = try APITestBed()
        try await withFakeAPI(bed: bed) { fake, _ in
            let stored = APITestBed.history(30)
            fake.addNotifications(stored)
            let directory = try TemporaryDirectory(prefix: "signet-history")
            defer { directory.remove() }
            var options = AppStoreHistorySource.Options(start: "2d", checkpointPath: directory.path("backfill.json"))
            options.subWindows = 1
            options.parallelism = 1
            // The first page comes; then Apple refuses the start (a changed lookback, a clock ahead).
            fake.script([.delay(.zero), .error(status: 400, errorCode: 4_000_012)], on: .notificationHistory)
            let source = AppStoreHistorySource(options: options) { try bed.client(fake) }
            try await source.open()
            var failure: (any Error)?
            var delivered = 0
            do {
                while let records = try await source.nextBatch(maxRecords: 100) {
                    delivered += records.count
                    try await source.commit(records.map(\.position))
                }
            } catch {
                failure = error
            }
            try await source.close()
            let message = "\(try #require(failure))"
            #expect(message.contains("ends inside Apple's lookback") && message.contains("run the backfill again to resume"), "\(message)")
            #expect(delivered == 20)
            let saved = try #require(try AppStoreHistoryCheckpoint.load(directory.path("backfill.json")))
            #expect(!saved.isFinished && saved.subWindows[0].pages == 1 && saved.subWindows[0].notifications == 20)

            // The next run resumes after the committed page and finishes the part.
            let again = AppStoreHistorySource(options: options) { try bed.client(fake) }
            try await again.open()
            var rest: [Record] = []
            while let records = try await again.nextBatch(maxRecords: 100) {
                rest += records
                try await again.commit(records.map(\.position))
            }
            try await again.close()
            #expect(rest.count == 10)
            #expect(try AppStoreHistoryCheckpoint.load(directory.path("backfill.json"))?.isFinished == true)
        }
    }

    @Test("sub-windows are fetched concurrently, each a stream of its own in order, within the rate limit")
    func concurrentSubWindows() async throws {
        try await withFakeAPI(client: { try $0.client($1, requestsPerSecond: 20) }) { fake, client in
            let hour: Int64 = 3_600_000
            let first = APITestBed.nowMilliseconds() - 47 * hour
            // One every 70 minutes over two days: every sub-window has some.
            fake.addNotifications(APITestBed.samples.prefix(40).enumerated().map { $1.stored(sentDate: first + Int64($0) * 70 * 60_000) })
            fake.setPageSizes(notifications: 2)
            fake.setResponseDelay(.milliseconds(150))
            let directory = try TemporaryDirectory(prefix: "signet-history")
            defer { directory.remove() }
            var options = AppStoreHistorySource.Options(start: "2d", checkpointPath: directory.path("backfill.json"))
            options.subWindows = 8
            options.parallelism = 4
            let source = AppStoreHistorySource(options: options) { client }
            try await source.open()
            var offsets: [String: [Int64]] = [:]
            var payloads: [String] = []
            while let records = try await source.nextBatch(maxRecords: 8) {
                for record in records {
                    offsets[record.position.stream, default: []].append(record.position.offset)
                    let object = try #require(JSONSerialization.jsonObject(with: Data(record.raw)) as? [String: String])
                    payloads.append(try #require(object["signedPayload"]))
                }
                try await source.commit(records.map(\.position))
            }
            let progress = try #require(source.progress)
            try await source.close()

            #expect(Set(payloads) == Set(APITestBed.samples.prefix(40).map(\.signedPayload)) && payloads.count == 40)
            #expect(offsets.count == 8, "\(offsets.keys.sorted())")
            for (stream, list) in offsets { #expect(list == Array(0..<Int64(list.count)), "\(stream): \(list)") }
            #expect(progress.finished && progress.fraction == 1)

            let requests = fake.requests(.notificationHistory)
            // Concurrent: some request arrived while another (of another sub-window) was being answered.
            let overlapping = zip(requests, requests.dropFirst()).contains { $1.arrival - $0.arrival < .milliseconds(150) }
            #expect(overlapping, "the sub-windows were fetched one after the other")
            // Within the client's 20/s: requests leave spaced, but under load some reach the
            // fake late and bunch with the next, so a one-second window may hold a few more.
            let arrivals = requests.map(\.arrival).sorted()
            for (index, start) in arrivals.enumerated() {
                let inWindow = arrivals[index...].prefix { $0 - start < .seconds(1) }.count
                #expect(inWindow <= 30, "\(inWindow) requests within 1 s from arrival \(index)")
            }
            let span = try #require(arrivals.last) - arrivals[0]
            #expect(span >= .milliseconds(50 * (arrivals.count - 1) - 200), "\(arrivals.count) requests in \(span)")
        }
    }
}
