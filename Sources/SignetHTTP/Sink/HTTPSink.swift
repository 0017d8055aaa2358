import AsyncHTTPClient
import Foundation
public import CoreMetrics
public import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOSSL
public import SignetCore
import SignetOpenSSL
import Synchronization

/// POSTs events to the user's backend (`type: http` under `sinks:`).
///
/// Acknowledged only on a 2xx answer. 408, 429, 5xx, timeouts and connection errors are
/// retried with capped exponential backoff (honouring `Retry-After`); when the retries
/// run out the write fails and the runner retries the batch later, nothing committed.
/// Any other 4xx is permanent: the sink delivers the rest and reports the refused
/// messages (`UndeliverableMessages`, reason `http_rejected`), which the runner
/// dead-letters. Requests go one at a time, in order, so per-key order holds; a retried
/// batch may re-send events already acknowledged (at-least-once: receivers dedupe on
/// the event id).
public final class HTTPSink: Sink {
    /// What to send and how hard to try.
    public struct Options: Sendable {
        /// One event per request, or a JSON array of up to ``maxBatch`` events.
        public enum Mode: String, Sendable, CaseIterable {
            case single, batch
        }

        public var url: String
        public var mode: Mode = .single
        public var maxBatch: Int = 100
        /// Per request, from connect to the last byte of the answer.
        public var timeout: Duration = .seconds(10)
        /// Attempts after the first, per request, before the write fails.
        public var maxRetries: Int = 5
        public var initialBackoff: Duration = .milliseconds(200)
        public var maxBackoff: Duration = .seconds(10)
        /// When set (or ``signingSecretFile``), every request carries `Signet-Signature:
        /// t=<unix>,v1=<hex>` (``EventSignature``), and the older `X-Signet-Signature:
        /// sha256=<hex HMAC-SHA256 of the body>` without timestamp, kept for receivers built on it.
        public var signingSecret: [UInt8]?
        /// A file holding the secret (read when the sink opens; a trailing newline is dropped).
        public var signingSecretFile: String?
        /// While rotating: the secret receivers may still hold, also signed with (a second `v1`).
        public var previousSigningSecret: [UInt8]?
        /// A file holding the previous secret.
        public var previousSigningSecretFile: String?
        /// Mutual TLS: the client certificate (PEM, the chain after it) presented to an https:// receiver.
        public var tlsCertificate: String?
        /// The client certificate's private key (PEM).
        public var tlsPrivateKey: String?
        /// Certificates (PEM) trusted for the receiver's, instead of the system's roots.
        public var tlsCA: String?
        /// Extra request headers (e.g. `Authorization`).
        public var headers: [(name: String, value: String)] = []

        public init(url: String) {
            self.url = url
        }
    }

    /// One HTTP exchange's outcome.
    enum Outcome: Equatable {
        case delivered
        /// Worth another try (after at least `retryAfter`, if the server said).
        case retryable(String, retryAfter: Duration?)
        /// Will fail the same way again.
        case refused(status: Int, detail: String)
    }

    public let options: Options
    private let logger: Logger
    private let client = Mutex<HTTPClient?>(nil)
    /// The signing secrets, read when the sink opens (files included).
    private let signature = Mutex<EventSignature?>(nil)
    /// `signet_http_sink_request_retries_total{sink}`: requests sent again after a retryable
    /// answer, before the write succeeds or fails (the runner's batch retries are counted apart).
    private let requestRetries: Counter

    /// - Parameters:
    ///   - name: the sink's name in the pipeline, the `sink` label of its metrics.
    ///   - options: the component's settings (its `Options`); the defaults fit most uses.
    ///   - logger: where it logs what it does and what fails.
    ///   - metrics: where the metrics go (default: the bootstrapped `MetricsSystem`).
    public init(
        options: Options, name: String = "http", logger: Logger = Logger(label: "signet.http-sink"),
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.options = options
        self.logger = logger
        self.requestRetries = Counter(
            label: "signet_http_sink_request_retries_total", dimensions: [("sink", name)], factory: metrics)
    }

    public func open() async throws {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(options.timeout.clampedNanoseconds)))
        configuration.tlsConfiguration = try options.tlsConfiguration()
        let secrets = try options.signingSecrets()
        signature.withLock { $0 = secrets.isEmpty ? nil : EventSignature(secrets: secrets) }
        client.withLock { current in
            // Opening twice keeps the first client: replacing it would drop one never shut down.
            if current == nil { current = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration) }
        }
    }

    deinit {
        // A sink dropped without close() (a run abandoned at its shutdown timeout, a caller that
        // threw) must not trip AsyncHTTPClient's "not shut down before deinit" precondition,
        // which would end the process: shut the client down in the background instead.
        if let leftover = client.withLock({ $0 }) {
            leftover.shutdown(queue: .global()) { _ in }
        }
    }

    public func close() async throws {
        let current = client.withLock { current in
            defer { current = nil }
            return current
        }
        try await current?.shutdown()
    }

    public func write(_ messages: [OutputMessage]) async throws {
        guard let client = client.withLock({ $0 }) else { throw HTTPSinkError.notOpen }
        var refusals: [UndeliverableMessages.Refusal] = []
        for request in requests(for: messages) {
            if case .refused(let status, let detail) = try await send(request, with: client) {
                let rejection = RecordRejection(.httpRejected, "HTTP \(status) from \(options.url): \(detail)")
                refusals += request.indices.map { UndeliverableMessages.Refusal(index: $0, rejection: rejection) }
            }
        }
        if !refusals.isEmpty { throw UndeliverableMessages(refusals) }
    }

    /// One request's body and the indices of the messages it carries.
    struct PreparedRequest {
        var body: [UInt8]
        var indices: Range<Int>
        var eventId: String?
    }

    func requests(for messages: [OutputMessage]) -> [PreparedRequest] {
        switch options.mode {
        case .single:
            return messages.indices.map { index in
                PreparedRequest(
                    body: messages[index].value, indices: index..<(index + 1), eventId: messages[index].header(.eventId))
            }
        case .batch:
            return stride(from: 0, to: messages.count, by: max(1, options.maxBatch)).map { start in
                let end = min(start + max(1, options.maxBatch), messages.count)
                var body: [UInt8] = [UInt8(ascii: "[")]
                for index in start..<end {
                    if index > start { body.append(UInt8(ascii: ",")) }
                    body += messages[index].value
                }
                body.append(UInt8(ascii: "]"))
                return PreparedRequest(body: body, indices: start..<end, eventId: nil)
            }
        }
    }

    /// Sends one request until it is delivered or refused, or the retries run out (throws).
    private func send(_ prepared: PreparedRequest, with client: HTTPClient) async throws -> Outcome {
        var request = HTTPClientRequest(url: options.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "signet")
        if let eventId = prepared.eventId { request.headers.add(name: "X-Signet-Event-Id", value: eventId) }
        let signature = signature.withLock { $0 }
        if let secret = signature?.secrets.first {
            let tag = HMACSHA256.authenticationCode(for: prepared.body, key: secret)
            request.headers.add(name: "X-Signet-Signature", value: "sha256=" + HMACSHA256.hex(tag))
        }
        for header in options.headers { request.headers.add(name: header.name, value: header.value) }
        request.body = .bytes(ByteBuffer(bytes: prepared.body))

        var backoff = options.initialBackoff
        var attempt = 0
        while true {
            // Signed at each attempt: a retry after a long backoff must still fall in the
            // receiver's replay window.
            if let signature {
                request.headers.replaceOrAdd(
                    name: "Signet-Signature", value: signature.header(for: prepared.body, at: WallClock.milliseconds() / 1000))
            }
            let outcome = await Self.exchange(request, with: client, timeout: options.timeout, logger: logger)
            switch outcome {
            case .delivered, .refused:
                return outcome
            case .retryable(let why, let retryAfter):
                guard attempt < options.maxRetries, !Task.isCancelled else {
                    throw HTTPSinkError.gaveUp(url: options.url, attempts: attempt + 1, lastError: why)
                }
                let wait = min(max(backoff, retryAfter ?? .zero), options.maxBackoff)
                logger.warning("http sink: \(why); retrying in \(wait) (attempt \(attempt + 1) of \(options.maxRetries + 1))")
                requestRetries.increment()
                try await Task.sleep(for: wait)
                backoff = min(backoff * 2, options.maxBackoff)
                attempt += 1
            }
        }
    }

    /// One POST to a receiver, classified (``classify(status:retryAfter:body:)``); an error
    /// before an answer (connection, timeout) is retryable. The `forward` sink's sends too.
    static func exchange(
        _ request: HTTPClientRequest, with client: HTTPClient, timeout: Duration, logger: Logger
    ) async -> Outcome {
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(timeout.clampedNanoseconds), logger: logger)
            // Read (a bounded part of) the answer so the connection can be reused, and for the detail.
            let body = try await response.body.collect(upTo: 64 << 10)
            return Self.classify(
                status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                body: String(buffer: body))
        } catch {
            return .retryable("\(request.url): \(NetworkFailure.describe(error))", retryAfter: nil)
        }
    }

    /// 2xx delivered; 408, 429, 5xx retryable; other 4xx (and 1xx/3xx, which a POST
    /// receiver must not send) refused.
    static func classify(status: Int, retryAfter: String?, body: String) -> Outcome {
        let detail = String(body.prefix(200))
        switch status {
        case 200..<300:
            return .delivered
        case 408, 429, 500..<600:
            let seconds = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { min(max($0, 0), 3600) }
            return .retryable("HTTP \(status): \(detail)", retryAfter: seconds.map { .seconds($0) })
        default:
            return .refused(status: status, detail: detail)
        }
    }
}

/// Why an HTTP sink write failed as a whole.
public enum HTTPSinkError: Error, CustomStringConvertible {
    case notOpen
    case gaveUp(url: String, attempts: Int, lastError: String)
    /// A secret file that cannot be read or is empty.
    case unreadable(key: String, path: String)
    /// A TLS certificate, key or CA file that cannot be used.
    case tls(String)

    public var description: String {
        switch self {
        case .notOpen: "the http sink is not open"
        case .unreadable(let key, let path): "http sink: \(key) '\(path)' cannot be read or is empty"
        case .tls(let why): "http sink: the TLS certificate, key or CA cannot be used: \(why)"
        case .gaveUp(let url, let attempts, let lastError):
            "POST \(url) failed \(attempts) times; last: \(lastError)"
        }
    }
}

extension HTTPSink.Options {
    /// The secrets to sign with, the current one first: each from its value or its file.
    func signingSecrets() throws -> [[UInt8]] {
        try [(signingSecret, signingSecretFile, "signing_secret_file"), (previousSigningSecret, previousSigningSecretFile, "previous_signing_secret_file")]
            .compactMap { value, file, key in
                if let value { return value }
                guard let file else { return nil }
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw HTTPSinkError.unreadable(key: key, path: file)
                }
                var bytes = Array(data)
                while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
                guard !bytes.isEmpty else { throw HTTPSinkError.unreadable(key: key, path: file) }
                return bytes
            }
    }

    /// The TLS settings for mutual TLS or a private CA; nil: AsyncHTTPClient's defaults.
    func tlsConfiguration() throws -> TLSConfiguration? {
        guard tlsCertificate != nil || tlsCA != nil else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        do {
            if let certificate = tlsCertificate, let key = tlsPrivateKey {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            }
            if let ca = tlsCA { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(ca)) }
        } catch {
            throw HTTPSinkError.tls("\(error)")
        }
        return tls
    }
}
