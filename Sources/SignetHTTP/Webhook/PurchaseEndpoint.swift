import AppStoreModels
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SignetCore
import SignetJWS
import SignetOpenSSL
import SignetState

/// `POST {purchases_path}` on the webhook's listener: the app's own call right after a
/// purchase. The app (through its backend) posts `{"signedTransaction": Transaction.jwsRepresentation}`;
/// the record goes through the pipeline like a notification, and once it is committed the
/// answer says what the purchase gives access to, so the app finishes the transaction only then.
///
/// | Answer | When |
/// |---|---|
/// | 200 `{"status":"committed"\|"dropped", "originalTransactionId", "appAccountToken", "entitlements":[…]}` | verified and committed (`dropped`: Signet had it already) |
/// | 422 `{"status":"rejected","reason","detail"}` | not verified (forged, another app or environment, malformed): nothing granted |
/// | 400 | not a `signedTransaction` object |
/// | 401 | the bearer token is missing or wrong (the entitlement API's rule: required off loopback) |
/// | 503 + Retry-After | as for notifications |
struct PurchaseEndpoint: Sendable {
    let path: String
    let store: StateStoreResource
    let token: BearerToken?
    let logger: Logger
    /// Store reads block (SQLite pages, a PostgreSQL round trip): off the cooperative pool.
    let executor = BlockingExecutor(label: "signet.http.purchases")

    /// nil when the request may proceed, else the 401 to send.
    func refusal(_ request: Request) -> Response? {
        guard let token, !token.accepts(authorizationHeader: request.headers[.authorization]) else { return nil }
        var response = EntitlementAPI.json(.unauthorized, #"{"error":"a valid bearer token is required"}"#)
        response.headers[.wwwAuthenticate] = "Bearer"
        return response
    }

    /// The signed transaction of a body, or why it is not one (400).
    func transaction(in body: [UInt8]) -> Result<String, RecordRejection> {
        do throws(RecordRejection) {
            let envelope = try DecodeStage.envelope(from: body)
            guard envelope.kind == .transaction else {
                return .failure(RecordRejection(.missingSignedPayload, "post {\"signedTransaction\": \"<Transaction.jwsRepresentation>\"}"))
            }
            return .success(envelope.jws)
        } catch {
            return .failure(error)
        }
    }

    /// The answer for a committed record of `jws`.
    func answer(_ status: Record.Status, jws: String) async -> Response {
        switch status {
        case .rejected(let rejection, _):
            var json = JSONText()
            json.beginObject()
            json.field("status", "rejected")
            json.field("reason", rejection.reason.rawValue)
            json.field("detail", rejection.detail)
            json.endObject()
            return Self.response(.unprocessableContent, json.bytes)
        case .active, .dropped:
            // The pipeline verified these exact bytes (decode and verify come before anything
            // that drops), so reading the payload's ids without verifying again is safe.
            guard let payload = Self.payload(of: jws), let purchase = payload.originalTransactionId else {
                return EntitlementAPI.json(.internalServerError, #"{"error":"the committed transaction has no originalTransactionId"}"#)
            }
            let store = self.store
            let entitlements: [UInt8]
            do {
                entitlements = try await executor.run {
                    try StateJSON.entitlements(.originalTransactionId(purchase), in: try store.store(), at: WallClock.milliseconds())
                }
            } catch {
                logger.error("http: state store read failed after a purchase was committed: \(error)")
                return EntitlementAPI.json(.serviceUnavailable, #"{"error":"the state store is not available"}"#)
            }
            var json = JSONText()
            json.beginObject()
            json.field("status", status == .active ? "committed" : "dropped")
            json.field("originalTransactionId", purchase)
            json.field("appAccountToken", payload.appAccountToken)
            json.key("entitlements")
            json.raw(entitlements)
            json.endObject()
            return Self.response(.ok, json.bytes)
        }
    }

    /// The JSON payload of a compact JWS, unverified (see ``answer(_:jws:)``).
    private static func payload(of jws: String) -> JWSTransactionDecodedPayload? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = try? Base64.decodeURL(String(parts[1])) else { return nil }
        return try? AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: bytes)
    }

    private static func response(_ status: HTTPResponse.Status, _ body: [UInt8]) -> Response {
        var buffer = ByteBuffer()
        buffer.writeBytes(body)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: buffer))
    }
}
