import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SignetAppStorePipeline
import SignetCore
import SignetJWS

/// Answers webhook requests: checks method, path, media type and size, hands the body
/// to the pipeline and replies with its record's fate.
///
/// | Answer | When |
/// |---|---|
/// | 200 | the record was committed: `{"status":"committed"}` (state written, every sink acknowledged), `{"status":"dead_lettered","reason":…}` or `{"status":"dropped","reason":"duplicate"}` |
/// | 400 | the body is empty or not shaped like a JSON object, `{...}` (nothing is kept: Apple never sends that) |
/// | 404 / 405 | another path / another method than POST |
/// | 413 | the body is larger than `max_body_bytes` |
/// | 415 | a `Content-Type` that is not JSON |
/// | 503 + Retry-After | backpressure, draining, a sink or store failing, no commit within `response_timeout`, or (with `retry_misconfigured`) dead-lettered for another app or environment |
///
/// On the `retention:` section's path, Apple's Get Retention Message requests pass the same
/// checks up to the body, then `RetentionResponder` answers: 200 with a retention answer, or
/// 403 without a body for anything that is not a verified request of this app.
///
/// Bodies are never logged, only their size.
struct WebhookResponder: HTTPResponder {
    typealias Context = WebhookRequestContext

    let intake: WebhookIntake
    let options: HTTPSource.Options
    /// The app's own call (`purchases_path`), when configured.
    let purchases: PurchaseEndpoint?
    /// Apple's Get Retention Message requests (`retention.path`), when configured: answered
    /// from the store at once, never through the pipeline.
    let retention: RetentionResponder?
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        let purchase: PurchaseEndpoint?
        var retention: RetentionResponder?
        if request.uri.path == options.path {
            purchase = nil
        } else if let purchases, request.uri.path == purchases.path {
            purchase = purchases
        } else if let responder = self.retention, request.uri.path == responder.policy.path {
            purchase = nil
            retention = responder
        } else {
            return Self.reply(.notFound, ["error": "not_found", "detail": "notifications are posted to \(options.path)"])
        }
        guard request.method == .post else {
            var headers = HTTPFields()
            headers[.allow] = "POST"
            return Self.reply(.methodNotAllowed, ["error": "method_not_allowed"], headers: headers)
        }
        if let purchase, let refusal = purchase.refusal(request) { return refusal }
        if let type = request.headers[.contentType], !type.lowercased().contains("json") {
            return Self.reply(.unsupportedMediaType, ["error": "unsupported_media_type", "detail": "send application/json"])
        }
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > options.maxBodyBytes {
            return tooLarge(declared)
        }
        guard intake.isAccepting else { return unavailable(.draining) }

        let body: [UInt8]
        switch try await readBody(request.body, channel: context.channel) {
        case .complete(let bytes): body = bytes
        case .tooLarge(let seen): return tooLarge(seen)
        }
        if let retention {
            // Verified, looked up and answered here; a refusal (403) carries no body: Apple's
            // rule is not to answer a request that is not this app's.
            let reply = await retention.respond(to: body)
            var headers = HTTPFields()
            if !reply.body.isEmpty { headers[.contentType] = "application/json" }
            return Response(
                status: HTTPResponse.Status(code: reply.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: reply.body)))
        }
        guard Self.isJSONObject(body) else {
            logger.info("webhook: refused a body that is not a JSON object", metadata: ["bytes": "\(body.count)"])
            let expected = purchase == nil ? "Apple's {\"signedPayload\": \"...\"}" : "{\"signedTransaction\": \"<Transaction.jwsRepresentation>\"}"
            return Self.reply(.badRequest, ["error": "not_json_object", "detail": "the body must be \(expected)"])
        }
        if let purchase {
            // `decode` turns away anything but a transaction (a notification posted here is
            // never applied as one); the answer comes from what `verify` put on the record.
            switch await intake.submit(body, requiring: .transaction, timeout: options.responseTimeout, on: context.channel.eventLoop) {
            case .committed(let outcome): return await purchase.answer(outcome)
            case .unavailable(let reason): return unavailable(reason)
            }
        }

        let outcome: RecordOutcome
        switch await intake.submit(body, timeout: options.responseTimeout, on: context.channel.eventLoop) {
        case .committed(let committed): outcome = committed
        case .unavailable(let reason): return unavailable(reason)
        }
        switch outcome.status {
        case .rejected(let rejection, _):
            if options.retryMisconfigured, ReasonCode.configurationMismatches.contains(rejection.reason) {
                // Committed (dead-lettered), but Apple should send it again once the setting is fixed.
                return unavailable(.misconfigured, detail: rejection.reason.rawValue)
            }
            return Self.reply(.ok, ["status": "dead_lettered", "reason": rejection.reason.rawValue])
        case .dropped(let reason):
            return Self.reply(.ok, ["status": "dropped", "reason": reason])
        case .active:
            return Self.reply(.ok, ["status": "committed"])
        }
    }

    private enum BodyRead {
        case complete([UInt8])
        case tooLarge(Int)
    }

    /// Reads at most `maxBodyBytes`; a body still incomplete after `bodyTimeout` closes the
    /// connection (the idle timeout alone would let a byte-a-second client stay forever).
    private func readBody(_ body: RequestBody, channel: any Channel) async throws -> BodyRead {
        // On the connection's event loop (where this request runs): cancelled for free when the
        // body arrives in time, which it almost always does.
        let watchdog = channel.eventLoop.scheduleTask(in: .nanoseconds(options.bodyTimeout.clampedNanoseconds)) {
            [timeout = options.bodyTimeout, logger] in
            logger.notice("webhook: body not complete within \(timeout), closing the connection")
            channel.close(promise: nil)
        }
        defer { watchdog.cancel() }
        var bytes: [UInt8] = []
        for try await buffer in body {
            guard bytes.count + buffer.readableBytes <= options.maxBodyBytes else {
                return .tooLarge(bytes.count + buffer.readableBytes)
            }
            bytes.append(contentsOf: buffer.readableBytesView)
        }
        return .complete(bytes)
    }

    private func tooLarge(_ size: Int) -> Response {
        logger.info("webhook: refused a body over max_body_bytes", metadata: ["bytes": "\(size)", "limit": "\(options.maxBodyBytes)"])
        var headers = HTTPFields()
        // The rest of the body is not read: the connection cannot be reused.
        headers[.connection] = "close"
        return Self.reply(
            .contentTooLarge, ["error": "body_too_large", "detail": "at most \(options.maxBodyBytes) bytes"], headers: headers)
    }

    private func unavailable(_ reason: WebhookIntake.UnavailableReason, detail: String? = nil) -> Response {
        logger.debug("webhook: answering 503", metadata: ["reason": "\(reason.rawValue)"])
        var headers = HTTPFields()
        headers[.retryAfter] = String(options.retryAfterSeconds)
        if let detail {
            return Self.reply(
                .serviceUnavailable, ["error": "unavailable", "reason": reason.rawValue, "detail": detail], headers: headers)
        }
        return Self.reply(.serviceUnavailable, ["error": "unavailable", "reason": reason.rawValue], headers: headers)
    }

    /// Only the outline is checked here (`{` ... `}`), without parsing: the `decode` stage
    /// parses every body anyway, and dead-letters a malformed object with `malformed_json`.
    static func isJSONObject(_ body: [UInt8]) -> Bool {
        guard let first = body.firstIndex(where: { !Self.isSpace($0) }),
            let last = body.lastIndex(where: { !Self.isSpace($0) }), first < last
        else { return false }
        return body[first] == UInt8(ascii: "{") && body[last] == UInt8(ascii: "}")
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func reply(_ status: HTTPResponse.Status, _ fields: KeyValuePairs<String, String>, headers: HTTPFields = HTTPFields()) -> Response {
        var json = JSONText()
        json.beginObject()
        for (key, value) in fields {
            json.key(key)
            json.string(value)
        }
        json.endObject()
        var headers = headers
        headers[.contentType] = "application/json"
        var buffer = ByteBuffer()
        buffer.writeBytes(json.bytes)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: buffer))
    }
}
