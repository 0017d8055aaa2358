import Foundation
import Synchronization

/// Apple's customer-support endpoints of ``FakeAppStoreAPI``, judged as Apple's pages describe
/// them (docs/support.md): Look Up Order ID (Production only; an unknown order is `status` 1),
/// Get Refund History v2 (20 a page, `revision` required after the first), Extend a
/// Subscription Renewal Date (1 to 90 days, reasons 0 to 3, identifiers of at most 128
/// characters; only subscriptions made extensible with ``addSubscription(_:expiresDate:familyShared:eligible:)``;
/// at most two extensions within 365 days; the same requestIdentifier again answers the first
/// answer and extends nothing), the mass extension and its status (UUID identifiers, the same
/// one again answers 200; complete once ``completeMassExtension(_:succeeded:failed:)`` says
/// so), Set App Account Token (a UUID; original transaction ids only; not family-shared) and
/// Get App Transaction Info.
public final class FakeSupport: Sendable {
    /// One extensible subscription.
    struct Subscription {
        var expiresDate: Int64
        var familyShared: Bool
        var eligible: Bool
        /// Extensions granted: (requestIdentifier, when, the answer).
        var extensions: [(id: String, at: Int64, answer: [String: Any])] = []
        var appAccountToken: String?
    }

    struct State {
        var orders: [String: [String]] = [:]
        var refunds: [String: [String]] = [:]
        var subscriptions: [String: Subscription] = [:]
        /// Transaction ids that are not original ones (Set App Account Token refuses them).
        var renewals: Set<String> = []
        var massExtensions: [String: (productId: String, body: [String: Any], complete: Bool, succeeded: Int, failed: Int)] = [:]
        var appTransactions: [String: String] = [:]
    }

    private let state = Mutex(State())
    let production: Bool

    init(production: Bool) { self.production = production }

    /// An order id and the signed transactions Look Up Order ID answers for it.
    public func addOrder(_ orderId: String, signedTransactions: [String]) { state.withLock { $0.orders[orderId] = signedTransactions } }

    /// The refunded transactions (signed) of the customer every id in `transactionIds` names.
    public func addRefunds(for transactionIds: [String], signedTransactions: [String]) {
        state.withLock { state in
            for id in transactionIds { state.refunds[id] = signedTransactions }
        }
    }

    /// A subscription Apple would extend (`eligible`) or refuse (4030004), or a family member's copy (4030007).
    public func addSubscription(_ originalTransactionId: String, expiresDate: Int64, familyShared: Bool = false, eligible: Bool = true) {
        state.withLock {
            $0.subscriptions[originalTransactionId] = Subscription(expiresDate: expiresDate, familyShared: familyShared, eligible: eligible)
        }
    }

    /// A transaction id that is a renewal, not an original transaction id.
    public func addRenewal(_ transactionId: String) { state.withLock { _ = $0.renewals.insert(transactionId) } }

    /// The signed app transaction Get App Transaction Info answers for each of `transactionIds`.
    public func addAppTransaction(for transactionIds: [String], signed: String) {
        state.withLock { state in
            for id in transactionIds { state.appTransactions[id] = signed }
        }
    }

    /// Apple finishing a mass extension.
    public func completeMassExtension(_ requestIdentifier: String, succeeded: Int, failed: Int) {
        state.withLock { state in
            state.massExtensions[requestIdentifier]?.complete = true
            state.massExtensions[requestIdentifier]?.succeeded = succeeded
            state.massExtensions[requestIdentifier]?.failed = failed
        }
    }

    /// How many extensions each subscription got (a resend of one is not another).
    public var extensionCounts: [String: Int] { state.withLock { $0.subscriptions.mapValues(\.extensions.count) } }
    /// The expiry each subscription has now (ms).
    public var expiresDates: [String: Int64] { state.withLock { $0.subscriptions.mapValues(\.expiresDate) } }
    /// The app account token each subscription was given.
    public var appAccountTokens: [String: String] { state.withLock { $0.subscriptions.compactMapValues(\.appAccountToken) } }
    /// The mass extensions asked for: their bodies as sent.
    public var massExtensionBodies: [String: [String: String]] {
        state.withLock { $0.massExtensions.mapValues { $0.body.mapValues { "\($0)" } } }
    }

    /// The answer to one request: status and JSON body (nil: none).
    func answer(_ route: FakeAppStoreAPI.Route, body: [UInt8], query: [String: [String]], path: [String]) -> (Int, Data?) {
        let (status, object) = state.withLock { state in
            Self.decide(&state, production: production, route: route, body: body, query: query, path: path)
        }
        return (status, object.flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) })
    }

    static let day: Int64 = 86_400_000

    private static func decide(
        _ state: inout State, production: Bool, route: FakeAppStoreAPI.Route, body: [UInt8], query: [String: [String]], path: [String]
    ) -> (Int, [String: Any]?) {
        func error(_ status: Int, _ code: Int) -> (Int, [String: Any]?) { (status, ["errorCode": code, "errorMessage": "fake error \(code)"]) }
        let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        let id = path.first ?? ""
        let now = FakeAppStoreAPI.nowMilliseconds()
        switch route {
        case .orderLookup:
            // Apple serves it in Production only: the Sandbox host has no such endpoint.
            guard production else { return (404, nil) }
            guard let signed = state.orders[id] else { return (200, ["status": 1]) }
            return (200, ["status": 0, "signedTransactions": signed])
        case .refundHistory:
            guard !id.isEmpty else { return error(400, 4_000_006) }
            let all = state.refunds[id] ?? []
            let offset: Int
            if let revision = query["revision"]?.first {
                guard revision.hasPrefix("rev-"), let at = Int(revision.dropFirst(4)), at <= all.count else { return error(400, 4_000_005) }
                offset = at
            } else {
                offset = 0
            }
            let page = Array(all.dropFirst(offset).prefix(20))
            return (200, ["signedTransactions": page, "revision": "rev-\(offset + page.count)", "hasMore": offset + page.count < all.count])
        case .renewalExtension:
            guard let json else { return error(400, 4_000_000) }
            guard let days = json["extendByDays"] as? Int, (1...90).contains(days) else { return error(400, 4_000_009) }
            guard let reason = json["extendReasonCode"] as? Int, (0...3).contains(reason) else { return error(400, 4_000_010) }
            guard let request = json["requestIdentifier"] as? String, !request.isEmpty, request.count <= 128 else { return error(400, 4_000_011) }
            guard var subscription = state.subscriptions[id] else { return error(404, 4_040_005) }
            // The same request again (a resend after a timeout) is the same extension.
            if let earlier = subscription.extensions.first(where: { $0.id == request }) { return (200, earlier.answer) }
            if subscription.familyShared { return error(403, 4_030_007) }
            guard subscription.eligible, subscription.expiresDate > now else { return error(403, 4_030_004) }
            guard subscription.extensions.filter({ now - $0.at < 365 * day }).count < 2 else { return error(403, 4_030_004) }
            subscription.expiresDate += Int64(days) * day
            let answer: [String: Any] = [
                "effectiveDate": subscription.expiresDate, "originalTransactionId": id, "success": true,
                "webOrderLineItemId": "wol-\(id)-\(subscription.extensions.count + 1)",
            ]
            subscription.extensions.append((request, now, answer))
            state.subscriptions[id] = subscription
            return (200, answer)
        case .massExtension:
            guard let json else { return error(400, 4_000_000) }
            guard let days = json["extendByDays"] as? Int, (1...90).contains(days) else { return error(400, 4_000_009) }
            guard let reason = json["extendReasonCode"] as? Int, (0...3).contains(reason) else { return error(400, 4_000_010) }
            guard let request = json["requestIdentifier"] as? String, FakeRetentionMessaging.isLowerUUID(request.lowercased()) else {
                return error(400, 4_000_011)
            }
            guard let product = json["productId"] as? String, !product.isEmpty else { return error(400, 4_000_023) }
            if let codes = json["storefrontCountryCodes"] as? [String] {
                if codes.isEmpty { return error(400, 4_000_027) }
                if codes.contains(where: { $0.count != 3 || $0.uppercased() != $0 }) { return error(400, 4_000_028) }
            }
            if state.massExtensions[request] == nil { state.massExtensions[request] = (product, json, false, 0, 0) }
            return (200, ["requestIdentifier": request])
        case .massExtensionStatus:
            let request = path.count > 1 ? path[1] : ""
            guard FakeRetentionMessaging.isLowerUUID(request.lowercased()) else { return error(400, 4_000_011) }
            guard let mass = state.massExtensions[request], mass.productId == id else { return error(404, 4_040_009) }
            var object: [String: Any] = ["requestIdentifier": request, "complete": mass.complete]
            if mass.complete {
                object["completeDate"] = now
                object["succeededCount"] = mass.succeeded
                object["failedCount"] = mass.failed
            }
            return (200, object)
        case .appAccountToken:
            guard let token = json?["appAccountToken"] as? String, UUID(uuidString: token) != nil else { return error(400, 4_000_183) }
            if state.renewals.contains(id) { return error(400, 4_000_187) }
            guard state.subscriptions[id] != nil else { return error(404, 4_040_005) }
            if state.subscriptions[id]?.familyShared == true { return error(400, 4_000_185) }
            state.subscriptions[id]?.appAccountToken = token
            return (200, nil)
        case .appTransactionInfo:
            guard let signed = state.appTransactions[id] else { return error(404, 4_040_019) }
            return (200, ["signedAppTransactionInfo": signed])
        default:
            return (500, nil)
        }
    }
}
