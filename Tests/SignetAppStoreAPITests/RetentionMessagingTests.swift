import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetTestSupport
import Testing

/// The Retention Messaging API's configuration calls against the fake: Apple's rules checked
/// before sending (nothing reaches the fake), identifiers sent lower-case, Apple's refusals
/// thrown with their codes, the performance test on the Sandbox host only.
@Suite("Retention messaging configuration calls")
struct RetentionMessagingTests {
    static let upper = "6F1E3C2A-1B2C-4D5E-8F90-A1B2C3D4E5F6"

    /// `body` must throw a ``RetentionMessagingError`` of `rule`, and nothing may reach the fake.
    static func refused(
        _ rule: RetentionMessagingError.Rule, _ fake: FakeAppStoreAPI, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await expectNotSent(rule, as: RetentionMessagingError.self, rule: \.rule, fake, body, sourceLocation: sourceLocation)
    }

    static func apple(_ code: Int, status: Int, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async {
        await expectAppleRefusal(code, status: status, body, sourceLocation: sourceLocation)
    }

    @Test("messages: uploaded under a lower-case id, listed with their state, a reused id and an unknown delete refused by Apple")
    func messages() async throws {
        try await withFakeAPI(.sandbox) { fake, client in
            let message = RetentionMessage(header: "Stay with Pro", body: "Half price for three months.")
            try await client.uploadMessage(identifier: Self.upper, message)
            let upload = try #require(fake.requests(.retentionMessage).last)
            #expect(upload.method == "PUT" && upload.pathParameter == Self.upper.lowercased())
            #expect(upload.jsonBody as? [String: String] == ["header": "Stay with Pro", "body": "Half price for three months."])
            let list = try await client.messageList()
            #expect(list.messageIdentifiers.map(\.messageIdentifier) == [Self.upper.lowercased()])
            #expect(list.messageIdentifiers.first?.messageState == "APPROVED", "Sandbox approves at once")
            await Self.apple(4_090_001, status: 409) { try await client.uploadMessage(identifier: Self.upper.lowercased(), message) }
            #expect(fake.requests(.retentionMessage).count == 2, "a 409 is not retried")
            try await client.deleteMessage(identifier: Self.upper)
            #expect(try await client.messageList().messageIdentifiers.isEmpty)
            await Self.apple(4_040_015, status: 404) { try await client.deleteMessage(identifier: Self.upper) }
        }
    }

    @Test("messages Apple's rules refuse are not sent: lengths in scalars, bullet points, ABOVE_IMAGE without an image, ids")
    func messageRules() async throws {
        try await withFakeAPI(.sandbox) { fake, client in
            let id = UUID().uuidString
            let image = UUID().uuidString
            func upload(_ message: RetentionMessage, id: String = id) async throws { try await client.uploadMessage(identifier: id, message) }
            await Self.refused(.headerTooLong, fake) { try await upload(RetentionMessage(header: String(repeating: "h", count: 67), body: "b")) }
            await Self.refused(.headerTooLong, fake) { try await upload(RetentionMessage(header: "", body: "b")) }
            // 66 family emoji are 66 graphemes but 462 scalars: too long by the stricter count.
            await Self.refused(.headerTooLong, fake) { try await upload(RetentionMessage(header: String(repeating: "👨‍👩‍👧", count: 20), body: "b")) }
            await Self.refused(.bodyTooLong, fake) { try await upload(RetentionMessage(header: "h", body: String(repeating: "b", count: 145))) }
            await Self.refused(.altTextTooLong, fake) {
                try await upload(RetentionMessage(header: "h", body: "b", image: .init(imageIdentifier: image, altText: String(repeating: "a", count: 151))))
            }
            let point = RetentionMessage.BulletPoint(text: "Offline mode", imageIdentifier: image, altText: "a star")
            await Self.refused(.tooManyBulletPoints, fake) { try await upload(RetentionMessage(header: "h", body: "b", bulletPoints: Array(repeating: point, count: 6))) }
            var long = point
            long.text = String(repeating: "t", count: 67)
            await Self.refused(.bulletPointTextTooLong, fake) { try await upload(RetentionMessage(header: "h", body: "b", bulletPoints: [long])) }
            await Self.refused(.aboveImageRequiresAnImage, fake) { try await upload(RetentionMessage(header: "h", body: "b", headerPosition: .aboveImage)) }
            await Self.refused(.invalidIdentifier, fake) { try await upload(RetentionMessage(header: "h", body: "b"), id: "message-1") }
            await Self.refused(.invalidIdentifier, fake) {
                try await upload(RetentionMessage(header: "h", body: "b", image: .init(imageIdentifier: "banner", altText: "a")))
            }
            // At the limits exactly: sent, with the image id lower-cased.
            try await upload(RetentionMessage(
                header: String(repeating: "h", count: 66), body: String(repeating: "b", count: 144),
                image: .init(imageIdentifier: image, altText: String(repeating: "a", count: 150)), bulletPoints: Array(repeating: point, count: 5),
                headerPosition: .aboveImage))
            let sent = try #require(fake.requests(.retentionMessage).last?.jsonBody)
            #expect((sent["image"] as? [String: String])?["imageIdentifier"] == image.lowercased())
            #expect(sent["headerPosition"] as? String == "ABOVE_IMAGE" && (sent["bulletPoints"] as? [Any])?.count == 5)
        }
    }

    @Test("images: a PNG without transparency of the size its imageSize asks, sent as image/png; one in use cannot be deleted")
    func images() async throws {
        try await withFakeAPI(.sandbox) { fake, client in
            #expect(throws: RetentionMessagingError.self) { try RetentionImage(png: Array("GIF89a".utf8)) }
            #expect(throws: RetentionMessagingError.self) { try RetentionImage(png: PNGFixture.make(width: 3840, height: 2161)) }
            #expect(throws: RetentionMessagingError.self) { try RetentionImage(png: PNGFixture.make(width: 3839, height: 400)) }
            #expect(throws: RetentionMessagingError.self) { try RetentionImage(png: PNGFixture.make(width: 3840, height: 159)) }
            #expect(throws: RetentionMessagingError.self) { try RetentionImage(png: PNGFixture.make(width: 3840, height: 400, colorType: 6)) }
            #expect(throws: RetentionMessagingError.self) { try RetentionImage(png: PNGFixture.make(width: 3840, height: 400, transparentColor: true)) }
            #expect(throws: RetentionMessagingError.self) { try RetentionImage(png: PNGFixture.make(width: 3840, height: 400), size: .bulletPoint) }
            let banner = try RetentionImage(png: PNGFixture.make(width: 3840, height: 160))
            let star = try RetentionImage(png: PNGFixture.make(width: 1024, height: 1024), size: .bulletPoint)
            #expect(banner.width == 3840 && banner.height == 160)
            let bannerId = UUID().uuidString, starId = UUID().uuidString
            try await client.uploadImage(identifier: bannerId, banner)
            try await client.uploadImage(identifier: starId, star)
            let uploads = fake.requests(.retentionImage)
            #expect(uploads.map { $0.query["imageSize"] ?? [] } == [["FULL_SIZE"], ["BULLET_POINT"]])
            #expect(uploads.first?.body == banner.png && uploads.first?.pathParameter == bannerId.lowercased())
            let list = try await client.imageList()
            #expect(Set(list.imageIdentifiers.map(\.imageIdentifier)) == [bannerId.lowercased(), starId.lowercased()])
            #expect(Set(list.imageIdentifiers.compactMap(\.imageSize)) == ["FULL_SIZE", "BULLET_POINT"])
            await Self.apple(4_090_000, status: 409) { try await client.uploadImage(identifier: bannerId, banner) }

            try await client.uploadMessage(
                identifier: UUID().uuidString, RetentionMessage(header: "h", body: "b", image: .init(imageIdentifier: bannerId, altText: "a banner")))
            await Self.apple(4_030_019, status: 403) { try await client.deleteImage(identifier: bannerId) }
            try await client.deleteImage(identifier: starId)
            await Self.apple(4_040_014, status: 404) { try await client.deleteImage(identifier: starId) }
        }
    }

    @Test("default messages: approved messages only, idempotent, the locale kept as given; bad product or locale not sent")
    func defaults() async throws {
        try await withFakeAPI(.production) { fake, client in
            let id = UUID().uuidString
            try await client.uploadMessage(identifier: id, RetentionMessage(header: "h", body: "b"))
            // Production leaves it PENDING until Apple approves it.
            await Self.apple(4_030_017, status: 403) {
                try await client.configureDefaultMessage(productId: "com.example.pro.monthly", locale: "en-US", messageIdentifier: id)
            }
            fake.retention.approve(message: id.lowercased())
            #expect(try await client.defaultMessage(productId: "com.example.pro.monthly", locale: "en-US") == nil)
            try await client.configureDefaultMessage(productId: "com.example.pro.monthly", locale: "en-US", messageIdentifier: id)
            try await client.configureDefaultMessage(productId: "com.example.pro.monthly", locale: "en-US", messageIdentifier: id)
            #expect(fake.retention.defaults == ["com.example.pro.monthly/en-US": id.lowercased()])
            #expect(try await client.defaultMessage(productId: "com.example.pro.monthly", locale: "en-US") == id.lowercased())
            #expect(try await client.defaultMessage(productId: "com.example.pro.monthly", locale: "fr-FR") == nil)
            try await client.deleteDefaultMessage(productId: "com.example.pro.monthly", locale: "en-US")
            try await client.deleteDefaultMessage(productId: "com.example.pro.monthly", locale: "en-US")
            #expect(fake.retention.defaults.isEmpty)
            await Self.refused(.invalidProductId, fake) { try await client.deleteDefaultMessage(productId: "", locale: "en-US") }
            await Self.refused(.invalidLocale, fake) { try await client.defaultMessage(productId: "p", locale: "en US") }
            await Self.refused(.invalidLocale, fake) { try await client.defaultMessage(productId: "p", locale: "../en") }
            await Self.refused(.invalidIdentifier, fake) {
                try await client.configureDefaultMessage(productId: "p", locale: "en-US", messageIdentifier: "default")
            }
        }
    }

    @Test("the realtime URL: https and at most 256 characters or not sent; Production refused until a test passed")
    func realtimeURL() async throws {
        try await withFakeAPI(.production) { fake, client in
            await Self.refused(.invalidRealtimeURL, fake) { try await client.configureRealtimeURL("http://signet.example.com/retention") }
            await Self.refused(.invalidRealtimeURL, fake) { try await client.configureRealtimeURL("https://") }
            await Self.refused(.invalidRealtimeURL, fake) {
                try await client.configureRealtimeURL("https://example.com/" + String(repeating: "r", count: 237))
            }
            #expect(try await client.realtimeURL() == nil)
            await Self.apple(AppStoreAPIErrorCode.noPassingPerformanceTest, status: 403) {
                try await client.configureRealtimeURL("https://signet.example.com/retention")
            }
            fake.retention.markPerformanceTestPassed()
            let longest = "https://example.com/" + String(repeating: "r", count: 236)
            try await client.configureRealtimeURL(longest)
            #expect(try await client.realtimeURL() == longest)
            try await client.deleteRealtimeURL()
            #expect(try await client.realtimeURL() == nil)
        }
    }

    @Test("the performance test: on the Sandbox host from a Production client, the sandbox URL first, one at a time, PENDING until done")
    func performanceTest() async throws {
        let bed = try APITestBed()
        let sandbox = try await bed.startFake(.sandbox)
        // A Production client asks the Sandbox host (Apple serves these calls nowhere else).
        // Its Sandbox budget is Apple's 0.1/s: one call here, the rest through a Sandbox client.
        try await withFakeAPI(.production, bed: bed, client: { try $0.client($1, environment: .production, sandboxFallback: sandbox) }) { production, client in
            await Self.refused(.invalidPerformanceTestRequest, production) { _ = try await client.initiatePerformanceTest(originalTransactionId: "") }
            await Self.apple(4_000_211, status: 400) { _ = try await client.initiatePerformanceTest(originalTransactionId: "2000000123456789") }
            #expect(production.requests.isEmpty, "Apple serves the performance test on the Sandbox host only")
            #expect(sandbox.requests(.performanceTest).map(\.status) == [400], "the Sandbox URL is configured first")
        }
        let client = try bed.client(sandbox)
        try await client.configureRealtimeURL("https://signet.example.com/retention")
        let gate = Gate()
        sandbox.retention.setPerformanceTestRunner { target, config, otid in
            await gate.wait()
            return FakeRetentionMessaging.Outcome(
                result: target == "https://signet.example.com/retention" && otid == "2000000123456789" && config["maxConcurrentRequests"] == 10
                    ? "PASS" : "FAIL",
                successRate: 100, responseTimes: ["average": 4, "p50": 3, "p90": 6, "p95": 8, "p99": 12], failures: [:])
        }
        let started = try await client.initiatePerformanceTest(originalTransactionId: "2000000123456789")
        #expect(started.config.maxConcurrentRequests == 10 && started.config.responseTimeThreshold == 700 && started.config.successRateThreshold == 95)
        #expect(try await client.performanceTestResult(requestId: started.requestId).isPending)
        await Self.apple(4_000_213, status: 400) { _ = try await client.initiatePerformanceTest(originalTransactionId: "2000000123456789") }
        await gate.open()
        var result = try await client.performanceTestResult(requestId: started.requestId)
        let deadline = ContinuousClock.now + .seconds(10)
        while result.isPending, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            result = try await client.performanceTestResult(requestId: started.requestId)
        }
        #expect(result.result == "PASS" && result.successRate == 100 && result.responseTimes?.p99 == 12, "\(result)")
        #expect(result.target == "https://signet.example.com/retention" && result.config?.totalRequests == 100)
        await Self.apple(4_040_018, status: 404) { _ = try await client.performanceTestResult(requestId: UUID().uuidString) }
        await Self.refused(.invalidIdentifier, sandbox) { _ = try await client.performanceTestResult(requestId: "12345") }
        // Apple's request id comes back lower-case; one written upper-case is sent so.
        _ = try await client.performanceTestResult(requestId: started.requestId.uppercased())
        #expect(sandbox.requests(.performanceTestResult).last?.pathParameter == started.requestId)
        try await client.shutdown()
        await sandbox.stop()
    }
}

/// Opened once; waiters before that wait.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
