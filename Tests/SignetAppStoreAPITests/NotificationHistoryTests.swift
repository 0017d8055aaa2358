import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetFixtures
import SignetJWS
import SignetTestSupport
import Testing

@Suite("Get Notification History: paging, restarts, clamping, resuming")
struct NotificationHistoryTests {
    static func collect(_ pages: NotificationHistoryPages) async throws -> [NotificationHistoryPage] {
        var all: [NotificationHistoryPage] = []
        for try await page in pages { all.append(page) }
        return all
    }

    @Test("ids and tokens are percent-encoded byte by byte: unreserved characters stay, the rest is %XX of its UTF-8")
    func percentEncoding() {
        #expect(PercentEncoding.encoded("AZaz09-._~") == "AZaz09-._~")
        #expect(PercentEncoding.encoded("a+b/c=d e&f?g#h%") == "a%2Bb%2Fc%3Dd%20e%26f%3Fg%23h%25")
        #expect(PercentEncoding.encoded("é\u{1F600}") == "%C3%A9%F0%9F%98%80")
        #expect(PercentEncoding.encoded("") == "")
        // Foundation's encoder agrees on every printable ASCII character.
        let ascii = String(decoding: (0x20...0x7E).map { UInt8($0) }, as: UTF8.self)
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        #expect(PercentEncoding.encoded(ascii) == ascii.addingPercentEncoding(withAllowedCharacters: unreserved))
    }

    @Test("every item of the window, in order, 20 a page, the same body on every page, each payload verifies")
    func pagesInOrder() async throws {
        try await withFakeAPI { fake, client in
            let stored = APITestBed.history(45)
            fake.addNotifications(stored)
            // Outside the window: sent three days ago.
            fake.addNotifications([APITestBed.samples[50].stored(sentDate: APITestBed.nowMilliseconds() - 3 * 86_400_000)])
            let pages = try await Self.collect(client.notificationHistory(APITestBed.lastTwoDays()))
            #expect(pages.map(\.items.count) == [20, 20, 5])
            #expect(pages.map(\.hasMore) == [true, true, false])
            #expect(pages.flatMap(\.items).map(\.signedPayload) == stored.map(\.signedPayload))
            #expect(pages[0].paginationToken == nil)
            #expect(pages[1].paginationToken == pages[0].nextPaginationToken)
            #expect(pages[2].nextPaginationToken == nil)
            #expect(pages.allSatisfy { $0.restartedWindow == nil })

            let requests = fake.requests(.notificationHistory)
            #expect(requests.count == 3)
            #expect(Set(requests.map { String(decoding: $0.body, as: UTF8.self) }).count == 1)
            #expect(requests.map { $0.query["paginationToken"]?.first } == [nil, pages[0].nextPaginationToken, pages[1].nextPaginationToken])
            #expect(requests[0].jsonBody?["onlyFailures"] == nil)

            let verifier = try APITestBed.verifier()
            let verified = try pages.flatMap(\.items).map { try $0.verified(by: verifier) }
            #expect(verified.map(\.payload.notificationUUID) == APITestBed.samples.prefix(45).map(\.sample.notificationUUID))
        }
    }

    @Test("onlyFailures is sent and only failed deliveries come back")
    func onlyFailures() async throws {
        try await withFakeAPI { fake, client in
            let stored = APITestBed.history(30, failedEvery: 3)
            fake.addNotifications(stored)
            let pages = try await Self.collect(client.notificationHistory(APITestBed.lastTwoDays(onlyFailures: true)))
            #expect(pages.flatMap(\.items).map(\.signedPayload) == stored.filter(\.failed).map(\.signedPayload))
            #expect(pages.flatMap(\.items).allSatisfy { $0.sendAttempts.map(\.sendAttemptResult) == ["NO_RESPONSE"] })
            #expect(fake.requests(.notificationHistory).first?.jsonBody?["onlyFailures"] as? Bool == true)
        }
    }

    @Test("an expired token (4000017) restarts the window without the token, and the page says so")
    func expiredTokenRestarts() async throws {
        try await withFakeAPI { fake, client in
            let stored = APITestBed.history(45)
            fake.addNotifications(stored)
            var iterator = client.notificationHistory(APITestBed.lastTwoDays()).makeAsyncIterator()
            let first = try #require(try await iterator.next())
            fake.expirePaginationTokens()
            let restarted = try #require(try await iterator.next())
            #expect(restarted.restartedWindow?.errorCode == 4_000_017)
            #expect(restarted.paginationToken == nil)
            #expect(restarted.items.map(\.signedPayload) == first.items.map(\.signedPayload))
            var rest: [NotificationHistoryItem] = []
            while let page = try await iterator.next() {
                #expect(page.restartedWindow == nil)
                rest += page.items
            }
            #expect((restarted.items + rest).map(\.signedPayload) == stored.map(\.signedPayload))
            let requests = fake.requests(.notificationHistory)
            #expect(requests.map(\.status) == [200, 400, 200, 200, 200])
            #expect(requests[1].query["paginationToken"] != nil)
            #expect(requests[2].query["paginationToken"] == nil)
            #expect(Set(requests.map { String(decoding: $0.body, as: UTF8.self) }).count == 1)
        }
    }

    @Test("resuming after a committed token continues there; an invalid token (4000014) restarts the window")
    func resume() async throws {
        try await withFakeAPI { fake, client in
            let stored = APITestBed.history(45)
            fake.addNotifications(stored)
            let request = APITestBed.lastTwoDays()
            var iterator = client.notificationHistory(request).makeAsyncIterator()
            let committed = try #require(try await iterator.next()?.nextPaginationToken)
            let resumed = try await Self.collect(client.notificationHistory(request, resumingAfter: committed))
            #expect(resumed.flatMap(\.items).map(\.signedPayload) == stored.dropFirst(20).map(\.signedPayload))

            let bogus = try await Self.collect(client.notificationHistory(request, resumingAfter: "not-a-token"))
            #expect(bogus.first?.restartedWindow?.errorCode == 4_000_014)
            #expect(bogus.flatMap(\.items).map(\.signedPayload) == stored.map(\.signedPayload))
        }
    }

    @Test("a start beyond the lookback (4000012) is clamped to it and the window still comes back")
    func clamp() async throws {
        try await withFakeAPI { fake, client in
            let stored = APITestBed.history(25)
            fake.addNotifications(stored)
            let now = APITestBed.nowMilliseconds()
            let asked = NotificationHistoryRequest(startDate: now - 40 * 86_400_000, endDate: now)
            let pages = try await Self.collect(client.notificationHistory(asked))
            #expect(pages.flatMap(\.items).map(\.signedPayload) == stored.map(\.signedPayload))
            let clampedStart = try #require(pages.first?.request.startDate)
            // An hour inside the edge, as the clamp saw it (a moment after `now`).
            #expect(clampedStart >= now - fake.lookbackMilliseconds + 3_600_000)
            #expect(clampedStart < APITestBed.nowMilliseconds() - fake.lookbackMilliseconds + 3_600_000 + 1)
            #expect(pages.allSatisfy { $0.request.startDate == clampedStart && $0.request.endDate == now })
            let requests = fake.requests(.notificationHistory)
            #expect(requests.map(\.status) == [400, 200, 200])
            #expect((requests[0].jsonBody?["startDate"] as? NSNumber)?.int64Value == asked.startDate)
            #expect((requests[1].jsonBody?["startDate"] as? NSNumber)?.int64Value == clampedStart)
        }
    }

    @Test("a window entirely beyond the lookback throws 4000012 instead of clamping to nothing")
    func windowTooOld() async throws {
        try await withFakeAPI { _, client in
            let now = APITestBed.nowMilliseconds()
            let old = NotificationHistoryRequest(startDate: now - 60 * 86_400_000, endDate: now - 45 * 86_400_000)
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await Self.collect(client.notificationHistory(old)) }
            #expect(error?.isStartDateTooFarInPast == true)
        }
    }

    @Test("the lookback rule clamps a start beyond it once, deeper on each refusal, and calls a window gone only when it ends before the edge")
    func lookbackRule() {
        let day: Int64 = 86_400_000
        let now: Int64 = 400 * day
        let hour: Int64 = 3_600_000
        let lookback = NotificationHistoryLookback(environment: .sandbox)
        let edge = now - 30 * day
        #expect(lookback.verdict(start: now - 29 * day, end: now, now: now) == .inside)
        #expect(lookback.verdict(start: now - 45 * day, end: now, now: now) == .clamped(start: edge + hour))
        // Clamped a moment ago: not clamped again when planning.
        #expect(lookback.verdict(start: edge + hour, end: now, now: now + 60_000) == .inside)
        // Apple refused it again (it paged past the margin): each clamp goes a margin deeper.
        #expect(lookback.verdict(start: edge + hour, end: now, now: now + 60_000, refusals: 2) == .clamped(start: edge + 60_000 + 2 * hour))
        // Refused although it looked safe by this clock: it still moves forward.
        #expect(lookback.verdict(start: edge + hour + 60_000, end: now, now: now + 120_000, refusals: 1) == .clamped(start: edge + hour + 120_000))
        // Only a window that ends at or before the edge is gone.
        #expect(lookback.verdict(start: now - 45 * day, end: edge, now: now) == .gone)
        #expect(lookback.verdict(start: now - 45 * day, end: edge + 1, now: now) == .tooCloseToTheEdge)
        // Ending within the margin: half way to its end, never past it.
        #expect(lookback.verdict(start: now - 45 * day, end: edge + 20 * 60_000, now: now) == .clamped(start: edge + 10 * 60_000))
    }

    @Test("4000012 on a later page (Apple checks the start on every page): clamped again, deeper, and the window finishes; clamps are bounded")
    func clampOnLaterPage() async throws {
        try await withFakeAPI { fake, client in
            let stored = APITestBed.history(50)
            fake.addNotifications(stored)
            let now = APITestBed.nowMilliseconds()
            // Clamped when planned, an hour inside the edge; Apple refuses it on the second page
            // (the paging took longer than the margin).
            let asked = NotificationHistoryRequest(startDate: now - fake.lookbackMilliseconds + 3_600_000, endDate: now)
            var iterator = client.notificationHistory(asked).makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.items.count == 20)
            fake.script([.error(status: 400, errorCode: 4_000_012)], on: .notificationHistory)
            var rest: [NotificationHistoryPage] = []
            while let page = try await iterator.next() { rest.append(page) }
            let refusedAt = try #require(fake.requests(.notificationHistory).first { $0.status == 400 }?.arrivalMilliseconds)
            // Clamped again, an hour inside the edge as it is now: later than the first start.
            let second = try #require(rest.first?.request.startDate)
            #expect(second >= refusedAt - fake.lookbackMilliseconds + 3_600_000 && second > asked.startDate)
            #expect(rest.last?.hasMore == false)
            // The window started over from its first page with the clamped start: every stored
            // notification (all sent within the last hours) came back.
            #expect(Set(rest.flatMap(\.items).map(\.signedPayload)) == Set(stored.map(\.signedPayload)))

            // Refused every time: at most maximumClamps clamps, then the refusal is thrown.
            let before = fake.requests(.notificationHistory).count
            fake.script(Array(repeating: .error(status: 400, errorCode: 4_000_012), count: 10), on: .notificationHistory)
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await Self.collect(client.notificationHistory(asked)) }
            #expect(error?.isStartDateTooFarInPast == true)
            #expect(fake.requests(.notificationHistory).count - before == NotificationHistoryLookback.maximumClamps + 1)
        }
    }

    @Test("a 200 without hasMore or without the array is an invalid response, retried, then thrown; never an empty last page")
    func strictPages() async throws {
        try await withFakeAPI(client: { try $0.client($1, maxRetries: 2) }) { fake, client in
            fake.addNotifications(APITestBed.history(5))
            for body in [#"{}"#, #"{"notificationHistory":[]}"#, #"{"hasMore":false}"#, #"{"hasMore":null,"notificationHistory":[]}"#] {
                let before = fake.requests(.notificationHistory).count
                fake.script(Array(repeating: .raw(status: 200, body: Array(body.utf8)), count: 3), on: .notificationHistory)
                let error = await #expect(throws: AppStoreAPIError.self, "\(body)") {
                    _ = try await Self.collect(client.notificationHistory(APITestBed.lastTwoDays()))
                }
                #expect(error?.kind == .invalidResponse, "\(body)")
                #expect(fake.requests(.notificationHistory).count - before == 3, "\(body): one try and two retries")
            }
            // One bad answer among good ones: the retry brings the page.
            fake.script([.raw(status: 200, body: Array("{}".utf8))], on: .notificationHistory)
            let pages = try await Self.collect(client.notificationHistory(APITestBed.lastTwoDays()))
            #expect(pages.flatMap(\.items).count == 5)
        }
    }
}
