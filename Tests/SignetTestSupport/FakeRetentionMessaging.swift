import Foundation
import Synchronization

/// The Retention Messaging API's configuration endpoints of ``FakeAppStoreAPI``, judged as
/// Apple's pages describe them (docs/retention.md §4): the realtime URL (https, at most 256
/// characters; Production refused with 4030026 until a performance test passed), messages
/// (lengths, bullet points, ABOVE_IMAGE, 409 on a reused id; Sandbox approves at once,
/// Production leaves them PENDING until ``approve(message:)``), images (PNG, `imageSize`, 409,
/// 403 while a message uses one), default messages (approved messages only; idempotent) and
/// the performance test (Sandbox only; the sandbox URL first; one at a time; its result from
/// ``performanceTestRunner``, PENDING until that returns).
public final class FakeRetentionMessaging: Sendable {
    /// What a performance test came to, as Get Performance Test Results reports it.
    public struct Outcome: Sendable {
        /// `PASS` or `FAIL`.
        public var result: String
        /// Percent.
        public var successRate: Int
        /// Milliseconds: `average`, `p50`, `p90`, `p95`, `p99`.
        public var responseTimes: [String: Int]
        /// Failed attempts by `sendAttemptResult`.
        public var failures: [String: Int]

        public init(result: String, successRate: Int, responseTimes: [String: Int], failures: [String: Int]) {
            self.result = result
            self.successRate = successRate
            self.responseTimes = responseTimes
            self.failures = failures
        }
    }

    /// Runs a performance test against `target` (the configured realtime URL) with Apple's
    /// `config` (`maxConcurrentRequests`, `totalRequests`, `totalDuration`,
    /// `responseTimeThreshold`, `successRateThreshold`); nil leaves it PENDING.
    public typealias Runner = @Sendable (_ target: String, _ config: [String: Int], _ originalTransactionId: String) async -> Outcome?

    struct State {
        var realtimeURL: String?
        var messages: [String: (state: String, body: [String: Any])] = [:]
        var images: [String: (state: String, size: String)] = [:]
        var defaults: [String: String] = [:]
        var tests: [String: [String: Any]] = [:]
        var running: String?
        var passed = false
        var runner: Runner?
        var config: [String: Int] = [
            "maxConcurrentRequests": 10, "totalRequests": 100, "totalDuration": 2000, "responseTimeThreshold": 700,
            "successRateThreshold": 95,
        ]
    }

    private let state = Mutex(State())
    let production: Bool

    init(production: Bool) { self.production = production }

    /// What runs a performance test (nil: it stays PENDING).
    public func setPerformanceTestRunner(_ runner: Runner?) { state.withLock { $0.runner = runner } }

    /// Apple's approval of a message uploaded in Production.
    public func approve(message identifier: String) { state.withLock { $0.messages[identifier]?.state = "APPROVED" } }

    /// Marks a performance test passed (as Sandbox would, for this account), so Production takes a URL.
    public func markPerformanceTestPassed() { state.withLock { $0.passed = true } }

    public var realtimeURL: String? { state.withLock { $0.realtimeURL } }
    public var messageIdentifiers: [String] { state.withLock { $0.messages.keys.sorted() } }
    public var imageIdentifiers: [String] { state.withLock { $0.images.keys.sorted() } }
    /// The default message per `productId/locale`.
    public var defaults: [String: String] { state.withLock { $0.defaults } }

    static let uuid = try! NSRegularExpression(pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

    static func isLowerUUID(_ text: String) -> Bool {
        uuid.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// The answer to one request: status and JSON body (nil: none).
    func answer(_ route: FakeAppStoreAPI.Route, method: String, body: [UInt8], query: [String: [String]], contentType: String?, path: [String])
        -> (Int, Data?)
    {
        let (status, json, start) = state.withLock { state -> (Int, Data?, Start?) in
            var start: Start?
            let (status, object) = Self.decide(
                &state, start: &start, production: production, route: route, method: method, body: body, query: query,
                contentType: contentType, path: path)
            // JSON bytes leave the lock, not the dictionaries it guards.
            return (status, object.flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }, start)
        }
        if let start {
            Task { [self] in
                guard let outcome = await start.runner(start.target, start.config, start.otid) else { return }
                let object: [String: Any] = [
                    "config": start.config, "target": start.target, "result": outcome.result, "successRate": outcome.successRate,
                    "numPending": 0, "responseTimes": outcome.responseTimes, "failures": outcome.failures,
                ]
                let bytes = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
                self.state.withLock { state in
                    state.tests[start.id] = (try? JSONSerialization.jsonObject(with: bytes)) as? [String: Any]
                    if outcome.result == "PASS" { state.passed = true }
                }
            }
        }
        return (status, json)
    }

    /// A performance test to run once the lock is released.
    struct Start: Sendable {
        var id: String, target: String, config: [String: Int], otid: String, runner: Runner
    }

    private static func decide(
        _ state: inout State, start: inout Start?, production: Bool, route: FakeAppStoreAPI.Route, method: String, body: [UInt8],
        query: [String: [String]], contentType: String?, path: [String]
    ) -> (Int, [String: Any]?) {
        func error(_ status: Int, _ code: Int) -> (Int, [String: Any]?) { (status, ["errorCode": code, "errorMessage": "fake error \(code)"]) }
        do {
            // Parsed here, under the lock: what the state keeps of it never came from outside.
            let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
            switch (route, method) {
            case (.realtimeURL, "PUT"):
                guard let url = json?["realtimeURL"] as? String, url.hasPrefix("https://"), url.utf8.count <= 256 else { return error(400, 4_000_215) }
                if production && !state.passed { return error(403, 4_030_026) }
                state.realtimeURL = url
                return (200, nil)
            case (.realtimeURL, "GET"):
                guard let url = state.realtimeURL else { return error(404, 4_040_021) }
                return (200, ["realtimeURL": url])
            case (.realtimeURL, _):
                state.realtimeURL = nil
                return (200, nil)
            case (.retentionMessage, "PUT"):
                let id = path.first ?? ""
                guard Self.isLowerUUID(id) else { return error(400, 4_000_000) }
                guard state.messages[id] == nil else { return error(409, 4_090_001) }
                guard let json, let header = json["header"] as? String, let text = json["body"] as? String else { return error(400, 4_000_000) }
                if header.unicodeScalars.count > 66 { return error(400, 4_000_162) }
                if text.unicodeScalars.count > 144 { return error(400, 4_000_163) }
                let image = json["image"] as? [String: Any]
                if let alt = image?["altText"] as? String, alt.unicodeScalars.count > 150 { return error(400, 4_000_175) }
                let bullets = json["bulletPoints"] as? [[String: Any]] ?? []
                if bullets.count > 5 { return error(400, 4_000_218) }
                if bullets.contains(where: { (($0["text"] as? String)?.unicodeScalars.count ?? 0) > 66 }) { return error(400, 4_000_219) }
                if json["headerPosition"] as? String == "ABOVE_IMAGE", image == nil { return error(400, 4_000_224) }
                if state.messages.count >= 2000 { return error(403, 4_030_016) }
                state.messages[id] = (production ? "PENDING" : "APPROVED", json)
                return (200, nil)
            case (.retentionMessage, "DELETE"):
                guard state.messages.removeValue(forKey: path.first ?? "") != nil else { return error(404, 4_040_015) }
                return (200, nil)
            case (.messageList, _):
                return (200, ["messageIdentifiers": state.messages.keys.sorted().map { ["messageIdentifier": $0, "messageState": state.messages[$0]?.state ?? ""] }])
            case (.retentionImage, "PUT"):
                let id = path.first ?? ""
                guard Self.isLowerUUID(id) else { return error(400, 4_000_000) }
                let size = query["imageSize"]?.first ?? "FULL_SIZE"
                guard ["FULL_SIZE", "BULLET_POINT"].contains(size) else { return error(400, 4_000_216) }
                guard contentType == "image/png", body.starts(with: [0x89, 0x50, 0x4E, 0x47]) else { return error(400, 4_000_161) }
                guard state.images[id] == nil else { return error(409, 4_090_000) }
                state.images[id] = (production ? "PENDING" : "APPROVED", size)
                return (200, nil)
            case (.retentionImage, "DELETE"):
                let id = path.first ?? ""
                guard state.images[id] != nil else { return error(404, 4_040_014) }
                let used = state.messages.values.contains { message in
                    (message.body["image"] as? [String: Any])?["imageIdentifier"] as? String == id
                        || (message.body["bulletPoints"] as? [[String: Any]] ?? []).contains { $0["imageIdentifier"] as? String == id }
                }
                if used { return error(403, 4_030_019) }
                state.images[id] = nil
                return (200, nil)
            case (.imageList, _):
                return (200, ["imageIdentifiers": state.images.keys.sorted().map {
                    ["imageIdentifier": $0, "imageState": state.images[$0]?.state ?? "", "imageSize": state.images[$0]?.size ?? ""]
                }])
            case (.defaultMessage, let verb):
                guard path.count == 2, !path[0].isEmpty else { return error(400, 4_000_023) }
                guard path[1].range(of: "^[A-Za-z]{2,3}(-[A-Za-z0-9]+){0,2}$", options: .regularExpression) != nil else { return error(400, 4_000_164) }
                let key = path[0] + "/" + path[1]
                switch verb {
                case "PUT":
                    guard let id = json?["messageIdentifier"] as? String, let message = state.messages[id] else { return error(404, 4_040_015) }
                    guard message.state == "APPROVED" else { return error(403, 4_030_017) }
                    state.defaults[key] = id
                    return (200, nil)
                case "GET":
                    guard let id = state.defaults[key] else { return error(404, 4_040_020) }
                    return (200, ["messageIdentifier": id])
                default:
                    state.defaults[key] = nil
                    return (200, nil)
                }
            case (.performanceTest, _):
                guard !production else { return (404, nil) }
                guard let otid = json?["originalTransactionId"] as? String, !otid.isEmpty, state.realtimeURL != nil else {
                    return error(400, 4_000_211)
                }
                if let running = state.running, state.tests[running]?["result"] as? String == "PENDING" { return error(400, 4_000_213) }
                let id = UUID().uuidString.lowercased()
                let config = state.config
                state.tests[id] = ["config": config, "target": state.realtimeURL ?? "", "result": "PENDING", "numPending": config["totalRequests"] ?? 0]
                state.running = id
                if let runner = state.runner { start = Start(id: id, target: state.realtimeURL ?? "", config: config, otid: otid, runner: runner) }
                return (200, ["config": config, "requestId": id])
            case (.performanceTestResult, _):
                guard !production else { return (404, nil) }
                guard let test = state.tests[path.first ?? ""] else { return error(404, 4_040_018) }
                return (200, test)
            default:
                return (405, nil)
            }
        }
    }
}
