// (5) The webhook (HTTPSource + PipelineService) inside the embedder's own ServiceGroup, posted
// to over real HTTP on 127.0.0.1, then shut down gracefully.
import Foundation
import Logging
import ServiceLifecycle
import SignetHTTP
import SignetState
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Webhook in the embedder's ServiceGroup")
struct WebhookServiceGroupTests {
    let fixtures = Fixtures.shared

    /// What the embedder's own service saw when the group asked it to stop.
    final class Observation: Sendable {
        let state = Mutex<(stopped: Bool, pipelineDone: Bool, purchasesKnown: Int)>((false, false, 0))
    }

    /// Stands for the rest of the embedder's service: waits for the graceful shutdown, then
    /// notes whether the pipeline (listed after it) had finished and what the store held.
    struct AppService: Service {
        let pipeline: PipelineService
        let store: SQLiteStateStore
        let purchases: [String]
        let observation: Observation
        func run() async throws {
            try? await gracefulShutdown()
            let done = pipeline.outcome != nil
            let now = nowMilliseconds()
            let known = purchases.filter { (try? store.entitlements(originalTransactionId: $0, at: now).isEmpty == false) ?? false }.count
            observation.state.withLock { $0 = (true, done, known) }
        }
    }

    @Test("posts, a retry, forgeries and misaddressed notifications over HTTP; graceful shutdown; what got 200 is committed", .timeLimit(.minutes(2)))
    func webhookInTheEmbeddersServiceGroup() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            // Three first purchases or renewals: each names a purchase the store must keep.
            var chosen: [(line: String, purchase: String, uuid: String)] = []
            for line in fixtures.notifications where chosen.count < 3 {
                let notification = try verifier.verifyNotification(try #require(Fixtures.signedPayload(of: line)))
                guard notification.notificationType == .subscribed || notification.notificationType == .didRenew,
                    let purchase = notification.transaction?.payload.originalTransactionId
                else { continue }
                chosen.append((line, purchase, try #require(notification.notificationUUID)))
            }
            try #require(chosen.count == 3)

            let path = directory.appendingPathComponent("signet.sqlite").path
            let store = try SQLiteStateStore(path: path)
            var storeOpen = true
            defer { if storeOpen { try? store.close() } }
            var readOnly = SQLiteStateStore.Options()
            readOnly.readOnly = true
            let reader = try SQLiteStateStore(path: path, options: readOnly)
            defer { try? reader.close() }

            var options = HTTPSource.Options()
            options.address = ListenAddress(host: "127.0.0.1", port: 0)
            let webhook = HTTPSource(options: options, logger: quietLogger)
            let events = CapturingEventSink()
            let deadLetters = CapturingSink()
            let pipeline = try Pipeline(
                source: webhook, stages: StatePipeline.stages(verifier: verifier, store: store),
                sinks: [NamedSink(name: "access", sink: events)], deadLetter: DeadLetterOutput(sink: deadLetters))
            let pipelineService = PipelineService(runner: PipelineRunner(pipeline: pipeline, logger: quietLogger), logger: quietLogger)
            let observation = Observation()
            let app = AppService(pipeline: pipelineService, store: store, purchases: chosen.map(\.purchase), observation: observation)
            // The pipeline listed last: it is stopped first.
            let group = ServiceGroup(services: [app, pipelineService], gracefulShutdownSignals: [], logger: quietLogger)
            let running = Task { try await group.run() }

            var bound: ListenAddress?
            for _ in 0..<500 where bound == nil {
                bound = webhook.boundAddress
                if bound == nil { try await Task.sleep(for: .milliseconds(20)) }
            }
            let address = try #require(bound, "the webhook never said where it listens")
            #expect(address.host == "127.0.0.1" || address.host == "localhost")
            #expect(address.port > 0)
            let port = address.port
            let now = nowMilliseconds()

            // Genuine notifications: 200 committed, applied and delivered before the answer.
            for (line, purchase, uuid) in chosen {
                let answer = try await HTTPClient.post(port: port, body: line)
                #expect(answer.status == 200, "\(answer)")
                #expect(answer.json?["status"] as? String == "committed", "\(answer)")
                #expect(try !reader.entitlements(originalTransactionId: purchase, at: now).isEmpty, "answered 200 before \(purchase) was in the store")
                #expect(events.events.contains { $0.notificationUUID == uuid }, "answered 200 before the sink got the event of \(uuid)")
            }
            let eventsBeforeRetry = events.events.count
            #expect(eventsBeforeRetry >= 3)

            // Apple's retry of the first: 200, a duplicate, no event.
            let retry = try await HTTPClient.post(port: port, body: chosen[0].line)
            #expect(retry.status == 200, "\(retry)")
            #expect(retry.json?["status"] as? String == "dropped", "\(retry)")
            #expect(retry.json?["reason"] as? String == "duplicate", "\(retry)")
            #expect(events.events.count == eventsBeforeRetry, "a retry published an event")

            // Forgeries: 200 and dead-lettered with the reason (400 for a body not shaped like an object).
            var deadLettered: [String] = []
            for line in fixtures.forged {
                let answer = try await HTTPClient.post(port: port, body: line)
                let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
                if trimmed.hasPrefix("{") && trimmed.hasSuffix("}") {
                    #expect(answer.status == 200, "\(answer)")
                    #expect(answer.json?["status"] as? String == "dead_lettered", "\(answer)")
                    let reason = answer.json?["reason"] as? String ?? "-"
                    #expect(DocumentedReasons.stage(of: reason) != nil, "undocumented reason \(reason)")
                    deadLettered.append(reason)
                } else {
                    #expect(answer.status == 400, "a body not shaped like a JSON object: \(answer)")
                }
            }
            #expect(deadLettered.contains("invalid_signature"), "\(deadLettered)")
            // Another app's, another environment's notification: 200, dead-lettered (retry_misconfigured is off).
            for (line, reason) in [(fixtures.wrongBundle[0], "bundle_id_mismatch"), (fixtures.wrongEnvironment[0], "environment_mismatch")] {
                let answer = try await HTTPClient.post(port: port, body: line)
                #expect(answer.status == 200, "\(answer)")
                #expect(answer.json?["status"] as? String == "dead_lettered", "\(answer)")
                #expect(answer.json?["reason"] as? String == reason, "\(answer)")
                deadLettered.append(reason)
            }
            #expect(events.events.count == eventsBeforeRetry, "a refused notification published an event")
            let letters = try deadLetters.messages.map(DeadLetter.init)
            #expect(letters.map(\.reason).sorted() == deadLettered.sorted(), "what was answered dead_lettered is not what the dead-letter sink got")

            // What is refused before the pipeline (docs/webhook.md, "What each answer means").
            #expect(try await HTTPClient.post(port: port, body: "hello").status == 400)
            #expect(try await HTTPClient.post(port: port, body: "").status == 400)
            #expect(try await HTTPClient.post(port: port, body: chosen[1].line, contentType: "text/plain").status == 415)
            #expect(try await HTTPClient.post(port: port, path: "/elsewhere", body: chosen[1].line).status == 404)
            let get = try await HTTPClient.send(port: port, method: "GET", path: "/notifications", body: nil)
            #expect(get.status == 405)
            #expect(get.headers["allow"]?.contains("POST") == true, "\(get)")

            // Graceful shutdown, as on SIGTERM: the group returns.
            await group.triggerGracefulShutdown()
            try await withTimeout(30, "the ServiceGroup's graceful shutdown") { try await running.value }

            let observed = observation.state.withLock { $0 }
            #expect(observed.stopped)
            #expect(observed.pipelineDone, "the embedder's service was stopped before the pipeline had finished")
            #expect(observed.purchasesKnown == 3)
            guard case .finished(let summary) = pipelineService.outcome else {
                Issue.record("the pipeline did not finish: \(String(describing: pipelineService.outcome))")
                return
            }
            #expect(summary.passed == 3)
            #expect(summary.droppedByReason["duplicate"] == 1)
            #expect(summary.rejected == deadLettered.count)
            #expect(summary.read == 3 + 1 + deadLettered.count, "\(summary)")
            // The listener is closed.
            await #expect(throws: (any Error).self, "the webhook still answers after the group returned") {
                try await HTTPClient.post(port: port, body: chosen[2].line)
            }

            // A restart: what was answered 200 is in the store, and its retries are duplicates.
            try store.close()
            storeOpen = false
            let restarted = try SQLiteStateStore(path: path)
            let replay: RunResult
            do {
                let later = nowMilliseconds()
                for (_, purchase, _) in chosen {
                    let answer = try restarted.entitlements(originalTransactionId: purchase, at: later)
                    #expect(answer.count == 1, "\(purchase) answered 200 is not in the store")
                }
                replay = try await runPipeline(
                    lines: chosen.map(\.line), stages: StatePipeline.stages(verifier: verifier, store: restarted), in: directory)
            } catch {
                try? restarted.close()
                throw error
            }
            try restarted.close()
            #expect(replay.summary.droppedByReason["duplicate"] == 3)
            #expect(replay.events.isEmpty)
        }
    }
}

#if canImport(Glibc)
private func socketSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int { Glibc.send(fd, bytes, count, flags) }
private func socketReceive(_ fd: Int32, _ bytes: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32) -> Int { Glibc.recv(fd, bytes, count, flags) }
#else
private func socketSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int { Darwin.send(fd, bytes, count, flags) }
private func socketReceive(_ fd: Int32, _ bytes: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32) -> Int { Darwin.recv(fd, bytes, count, flags) }
#endif

/// A minimal HTTP/1.1 client on a blocking socket (its own thread): one request per
/// connection, `Connection: close`.
enum HTTPClient {
    struct Answer: CustomStringConvertible, @unchecked Sendable {
        var status: Int
        /// Lower-cased names.
        var headers: [String: String]
        var body: String
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }
        var description: String { "HTTP \(status) \(body)" }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    static func post(port: Int, path: String = "/notifications", body: String, contentType: String? = "application/json") async throws -> Answer {
        try await send(port: port, method: "POST", path: path, body: body, contentType: contentType)
    }

    static func send(port: Int, method: String, path: String, body: String?, contentType: String? = nil) async throws -> Answer {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Answer, any Error>) in
            let thread = Thread {
                continuation.resume(with: Result { try exchange(port: port, method: method, path: path, body: body, contentType: contentType) })
            }
            thread.start()
        }
    }

    private static func exchange(port: Int, method: String, path: String, body: String?, contentType: String?) throws -> Answer {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect to 127.0.0.1:\(port): errno \(errno)") }

        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if let body { head += "Content-Length: \(body.utf8.count)\r\n" }
        let request = Array((head + "\r\n" + (body ?? "")).utf8)
        var sent = 0
        while sent < request.count {
            #if os(Linux)
            let flags = Int32(MSG_NOSIGNAL)
            #else
            let flags: Int32 = 0
            #endif
            let n = request[sent...].withUnsafeBytes { socketSend(fd, $0.baseAddress, $0.count, flags) }
            guard n > 0 else { break }  // the server may answer and close before reading everything
            sent += n
        }

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { socketReceive(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received.append(contentsOf: buffer[0..<n])
            if let answer = complete(received) { return answer }
        }
        if let answer = complete(received, atEOF: true) { return answer }
        throw Failure(description: "no complete answer from 127.0.0.1:\(port) (\(received.count) bytes)")
    }

    /// The answer, once `bytes` holds all of it.
    private static func complete(_ bytes: [UInt8], atEOF: Bool = false) -> Answer? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...max(0, bytes.count - 4)).first(where: { bytes.count >= 4 && Array(bytes[$0..<$0 + 4]) == separator }) else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[(end + 4)...])
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            guard body.count >= length else { return nil }
            body = Array(body.prefix(length))
        } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            guard let decoded = dechunk(body) else { return nil }
            body = decoded
        } else if !atEOF {
            return nil
        }
        return Answer(status: status, headers: headers, body: String(decoding: body, as: UTF8.self))
    }

    private static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var index = 0
        while true {
            guard let lineEnd = (index..<max(index, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }) else { return nil }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
            index = lineEnd + 2
            if size == 0 { return out }
            guard index + size + 2 <= bytes.count else { return nil }
            out += bytes[index..<index + size]
            index += size + 2
        }
    }
}
