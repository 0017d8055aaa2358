import AppStoreModels
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SignetCore
import SignetJWS
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
/// | 400 | not a `signedTransaction` object (`decode` rejects it: dead-lettered, nothing applied) |
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

    /// The answer for a committed record, from what the stages put on it: `decode`'s
    /// rejection (400: not a transaction object; the record required one, so a notification
    /// was never applied), `verify`'s or a later stage's (422), or the verified transaction's
    /// ids. The body is never read here.
    func answer(_ outcome: RecordOutcome) async -> Response {
        switch outcome.status {
        case .rejected(let rejection, let stage) where stage == Self.decodeStageName:
            var json = JSONText()
            json.beginObject()
            json.field("error", "not_a_transaction")
            json.field("detail", rejection.detail)
            json.endObject()
            return Self.response(.badRequest, json.bytes)
        case .rejected(let rejection, _):
            var json = JSONText()
            json.beginObject()
            json.field("status", "rejected")
            json.field("reason", rejection.reason.rawValue)
            json.field("detail", rejection.detail)
            json.endObject()
            return Self.response(.unprocessableContent, json.bytes)
        case .active, .dropped:
            // Only `verify` fills this part, and it ran before anything that drops.
            guard case .transaction(let transaction)? = outcome[VerifiedPayloadPart.self],
                let purchase = transaction.payload.originalTransactionId
            else {
                return EntitlementAPI.json(.internalServerError, #"{"error":"the committed record carries no verified transaction with an originalTransactionId"}"#)
            }
            let store = self.store
            let entitlements: [UInt8]
            do {
                entitlements = try await executor.run {
                    try StateJSON.entitlements(.originalTransactionId(purchase), in: try store.roles(), at: WallClock.milliseconds())
                }
            } catch {
                logger.error("http: state store read failed after a purchase was committed: \(error)")
                return EntitlementAPI.json(.serviceUnavailable, #"{"error":"the state store is not available"}"#)
            }
            var json = JSONText()
            json.beginObject()
            json.field("status", outcome.status == .active ? "committed" : "dropped")
            json.field("originalTransactionId", purchase)
            json.field("appAccountToken", transaction.payload.parsedAppAccountToken?.description)
            json.key("entitlements")
            json.raw(entitlements)
            json.endObject()
            return Self.response(.ok, json.bytes)
        }
    }

    /// The stage whose rejections mean the body is not a transaction object.
    private static let decodeStageName = DecodeStage().name

    private static func response(_ status: HTTPResponse.Status, _ body: [UInt8]) -> Response {
        var buffer = ByteBuffer()
        buffer.writeBytes(body)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: buffer))
    }
}
