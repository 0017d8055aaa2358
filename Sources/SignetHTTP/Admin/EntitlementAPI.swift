import AppStoreModels
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SignetAppStorePipeline
import SignetCore
import SignetState

/// `/v1/entitlements`, `/v1/subscriptions/{id}` and `/v1/subscriptions/{id}/events`: the
/// answers of `signet entitlements`, `signet state show` and `signet state history`, read
/// from the pipeline's state store as of now. With a token configured, every request must
/// carry it (`Authorization: Bearer …`), else 401.
struct EntitlementAPI: Sendable {
    let store: StateStoreResource
    let token: BearerToken?
    let offers: OfferSignatureService
    let logger: Logger

    func entitlements(_ request: Request) -> Response {
        if let refusal = authorize(request) { return refusal }
        // Exactly one purchase parameter, at most one `entitlement` and one `environment`: a repeated one
        // (`?originalTransactionId=A&originalTransactionId=B`) or an unknown one must not
        // silently answer for the first.
        var purchase: [StateJSON.Query] = []
        var names: [String] = []
        var environments: [String] = []
        var unknown = false
        for (name, value) in request.uri.queryParameters {
            switch name {
            case "appAccountToken":
                // Apple types it as a UUID: any spelling names the same customer, and text
                // that is no UUID names none (say so rather than answer `[]`).
                guard let token = AppAccountToken(value) else {
                    return Self.error(.badRequest, AppAccountToken.Invalid(field: "appAccountToken", text: String(value)).description)
                }
                purchase.append(.appAccountToken(token))
            case "originalTransactionId" where !value.isEmpty: purchase.append(.originalTransactionId(String(value)))
            case "entitlement" where !value.isEmpty: names.append(String(value))
            case "environment" where !value.isEmpty: environments.append(String(value))
            default: unknown = true
            }
        }
        guard !unknown, purchase.count == 1, let query = purchase.first, names.count <= 1, environments.count <= 1 else {
            return Self.json(
                .badRequest,
                #"{"error":"give exactly one of appAccountToken and originalTransactionId, and at most one entitlement and one environment"}"#)
        }
        return answer {
            try StateJSON.entitlements(
                query, named: names.first, environment: environments.first, in: try store.roles(), at: WallClock.milliseconds())
        }
    }

    func subscription(_ request: Request, originalTransactionId: String) -> Response {
        if let refusal = authorize(request) { return refusal }
        return answer {
            try StateJSON.subscription(originalTransactionId, in: try store.roles())
        }
    }

    /// `?limit=N` (1...1000) at most; the answer of `signet state history`.
    func history(_ request: Request, originalTransactionId: String) -> Response {
        if let refusal = authorize(request) { return refusal }
        var limit = StateJSON.defaultHistoryLimit
        var valid = true
        var seen = 0
        for (name, value) in request.uri.queryParameters {
            seen += 1
            if name == "limit", let number = Int(String(value)), (1...1000).contains(number) { limit = number } else { valid = false }
        }
        guard valid, seen <= 1 else { return Self.json(.badRequest, #"{"error":"the only parameter is limit, once, 1 to 1000"}"#) }
        return answer(notFound: #"{"error":"no state and no events for this originalTransactionId"}"#) {
            try StateJSON.history(originalTransactionId, limit: limit, in: try store.roles())
        }
    }

    /// `GET /v1/consent/{appTransactionId}`: the consent restriction RESCIND_CONSENT recorded.
    func consent(_ request: Request, appTransactionId: String) -> Response {
        if let refusal = authorize(request) { return refusal }
        return answer(notFound: Self.noConsentRecord) {
            try StateJSON.consent(appTransactionId, in: try store.roles(), at: WallClock.milliseconds())
        }
    }

    /// `POST /v1/consent/{appTransactionId}/clear[?by=NAME]`: the app's backend obtained consent
    /// again; the purchases of the app transaction answer `restricted: false`. A write: only
    /// with a token configured (a listener without one answers 403), and recorded with `by`.
    func clearConsent(_ request: Request, appTransactionId: String) -> Response {
        guard token != nil else {
            return Self.json(.forbidden, #"{"error":"clearing a consent restriction needs the API token configured (http.api_token)"}"#)
        }
        if let refusal = authorize(request) { return refusal }
        var by = "api"
        for (name, value) in request.uri.queryParameters {
            guard name == "by", !value.isEmpty, value.count <= 200 else {
                return Self.json(.badRequest, #"{"error":"the only parameter is by (who cleared it), up to 200 characters"}"#)
            }
            by = "api: " + String(value)
        }
        return answer(notFound: Self.noConsentRecord) {
            try StateJSON.consent(appTransactionId, clearingBy: by, in: try store.roles(), at: WallClock.milliseconds())
        }
    }

    private static let noConsentRecord = #"{"error":"no consent restriction was ever recorded for this appTransactionId"}"#

    func answer(notFound: String = #"{"error":"no state for this originalTransactionId"}"#, _ body: () throws -> [UInt8]?) -> Response {
        do {
            guard let json = try body() else { return Self.json(.notFound, notFound) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json)))
        } catch {
            logger.error("http: state store read failed: \(error)")
            return Self.json(.serviceUnavailable, #"{"error":"the state store is not available"}"#)
        }
    }

    /// nil when the request may proceed, else the 401 to send.
    func authorize(_ request: Request) -> Response? {
        guard let token else { return nil }
        if token.accepts(authorizationHeader: request.headers[.authorization]) { return nil }
        var response = Self.json(.unauthorized, #"{"error":"a valid bearer token is required"}"#)
        response.headers[.wwwAuthenticate] = "Bearer"
        return response
    }

    static func json(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
