import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SignetCore
import SignetState

/// `/v1/entitlements` and `/v1/subscriptions/{id}`: the answers of `signet entitlements`
/// and `signet state show`, read from the pipeline's state store as of now. With a
/// token configured, every request must carry it (`Authorization: Bearer …`), else 401.
struct EntitlementAPI: Sendable {
    let store: StateStoreResource
    let token: BearerToken?
    let logger: Logger

    func entitlements(_ request: Request) -> Response {
        if let refusal = authorize(request) { return refusal }
        // Exactly one purchase parameter and at most one `entitlement`: a repeated one
        // (`?originalTransactionId=A&originalTransactionId=B`) or an unknown one must not
        // silently answer for the first.
        var purchase: [StateJSON.Query] = []
        var names: [String] = []
        var unknown = false
        for (name, value) in request.uri.queryParameters {
            switch name {
            case "appAccountToken" where !value.isEmpty: purchase.append(.appAccountToken(String(value)))
            case "originalTransactionId" where !value.isEmpty: purchase.append(.originalTransactionId(String(value)))
            case "entitlement" where !value.isEmpty: names.append(String(value))
            default: unknown = true
            }
        }
        guard !unknown, purchase.count == 1, let query = purchase.first, names.count <= 1 else {
            return Self.json(
                .badRequest, #"{"error":"give exactly one of appAccountToken and originalTransactionId, and at most one entitlement"}"#)
        }
        return answer { try StateJSON.entitlements(query, named: names.first, in: try store.store(), at: WallClock.milliseconds()) }
    }

    func subscription(_ request: Request, originalTransactionId: String) -> Response {
        if let refusal = authorize(request) { return refusal }
        return answer {
            try StateJSON.subscription(originalTransactionId, in: try store.store())
        }
    }

    private func answer(_ body: () throws -> [UInt8]?) -> Response {
        do {
            guard let json = try body() else { return Self.json(.notFound, #"{"error":"no state for this originalTransactionId"}"#) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json)))
        } catch {
            logger.error("http: state store read failed: \(error)")
            return Self.json(.serviceUnavailable, #"{"error":"the state store is not available"}"#)
        }
    }

    /// nil when the request may proceed, else the 401 to send.
    private func authorize(_ request: Request) -> Response? {
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
