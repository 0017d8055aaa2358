import Hummingbird
import SignetCore
import SignetState

// The support desk's read of one customer (docs/support.md).
extension EntitlementAPI {
    /// `GET /v1/customers/{query}`: the customer an originalTransactionId, an appAccountToken or
    /// an appTransactionId names: purchases with state, entitlement names, expiry and "why", and the timeline,
    /// newest first; 404 when the store knows none.
    func customer(_ request: Request, query: String) -> Response {
        if let refusal = authorize(request) { return refusal }
        return answer(notFound: #"{"error":"no purchase with this originalTransactionId, appAccountToken or appTransactionId"}"#) {
            try CustomerProfile.find(query, in: try store.roles(), now: WallClock.milliseconds()).map { try StateJSON.encode($0) }
        }
    }
}
