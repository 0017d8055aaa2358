import AppStoreModels
import Foundation
import HTTPTypes
import Hummingbird
import SignetCore
import SignetState

/// `/v1/consumption/...`: the consumption consent ledger the app's backend writes (Apple may
/// be answered about a refund only with the customer's consent) and the refund questions
/// Apple asked. docs/consumption.md.
extension EntitlementAPI {
    /// `GET /v1/consumption/consent?appAccountToken=…` (or `originalTransactionId=…`): the
    /// ledger's entry, 404 when none was recorded.
    func consumptionConsent(_ request: Request) -> Response {
        if let refusal = authorize(request) { return refusal }
        var subjects: [ConsumptionConsent.Subject] = []
        var unknown = false
        for (name, value) in request.uri.queryParameters {
            switch Self.subject(String(name), String(value)) {
            case .subject(let subject): subjects.append(subject)
            case .invalid(let problem): return Self.error(.badRequest, problem)
            case .none: unknown = true
            }
        }
        guard !unknown, subjects.count == 1, let subject = subjects.first else { return Self.json(.badRequest, Self.oneSubject) }
        return answer(notFound: #"{"error":"no consumption consent was recorded for this customer or purchase"}"#) {
            try StateJSON.consumptionConsent(subject, in: try store.roles())
        }
    }

    /// `POST /v1/consumption/consent?appAccountToken=…&consented=true|false[&by=NAME][&refundPreference=…][&at=MS]`:
    /// records the customer's consent or its withdrawal (and, optionally, their own refund
    /// preference). A write: only with a token configured (else 403). Answers the entry that
    /// stands (an older `at` than the one kept changes nothing).
    func recordConsumptionConsent(_ request: Request) -> Response {
        guard token != nil else {
            return Self.json(.forbidden, #"{"error":"recording consent needs the API token configured (http.api_token)"}"#)
        }
        if let refusal = authorize(request) { return refusal }
        let now = WallClock.milliseconds()
        var subjects: [ConsumptionConsent.Subject] = []
        var consented: Bool?, by: String?, preference: String?, at: Int64?
        var seen: Set<String> = []
        for (name, value) in request.uri.queryParameters {
            let name = String(name), value = String(value)
            let named = Self.subject(name, value)
            if case .invalid(let problem) = named { return Self.error(.badRequest, problem) }
            guard seen.insert(name).inserted || named != nil else {
                return Self.json(.badRequest, #"{"error":"each parameter at most once"}"#)
            }
            switch name {
            case "consented" where value == "true" || value == "false": consented = value == "true"
            case "by" where !value.isEmpty && value.count <= 200: by = value
            case "refundPreference" where ConsumptionConsent.refundPreferences.contains(value): preference = value
            // When the customer decided, if not now; never later than now (a minute of clock skew allowed).
            case "at" where Int64(value).map({ $0 >= 0 && $0 <= now + 60_000 }) == true: at = Int64(value)
            default:
                guard case .subject(let subject) = named else {
                    return Self.json(.badRequest, #"{"error":"parameters: appAccountToken or originalTransactionId (one), consented=true|false, by (up to 200 characters), refundPreference (DECLINE, GRANT_FULL, GRANT_PRORATED), at (ms since 1970, not in the future)"}"#)
                }
                subjects.append(subject)
            }
        }
        guard subjects.count == 1, let subject = subjects.first else { return Self.json(.badRequest, Self.oneSubject) }
        guard let consented else { return Self.json(.badRequest, #"{"error":"consented=true or consented=false is required"}"#) }
        if preference != nil, !consented {
            return Self.json(.badRequest, #"{"error":"a refundPreference goes with consented=true (without consent Apple is not answered)"}"#)
        }
        let consent = ConsumptionConsent(
            subject, consented: consented, at: at ?? now, by: "api: " + (by ?? "backend"), refundPreference: preference)
        return answer {
            try StateJSON.recordConsumptionConsent(consent, in: try store.roles())
        }
    }

    /// `GET /v1/consumption/requests[?since=MS][&limit=N]`: the refund questions signed since
    /// `since` (default: the last 30 days), oldest first, at most `limit` (1...10000, default 1000).
    func consumptionRequests(_ request: Request) -> Response {
        if let refusal = authorize(request) { return refusal }
        let now = WallClock.milliseconds()
        var since = now - 30 * 86_400_000
        var limit = StateJSON.defaultConsumptionRequestLimit
        var seen: Set<String> = []
        for (name, value) in request.uri.queryParameters {
            let name = String(name), value = String(value)
            if name == "since", seen.insert(name).inserted, let value = Int64(value), value >= 0 {
                since = value
            } else if name == "limit", seen.insert(name).inserted, let value = Int(value), StateJSON.consumptionRequestLimits.contains(value) {
                limit = value
            } else {
                return Self.json(.badRequest, #"{"error":"parameters: since (ms since 1970), limit (1 to 10000), each at most once"}"#)
            }
        }
        return answer {
            try StateJSON.consumptionRequests(since: since, limit: limit, in: try store.roles(), at: now)
        }
    }

    /// `GET /v1/consumption/report[?since=MS]`: answered, skipped, late, failed and pending
    /// refund questions signed since `since` (default: 30 days ago), and Apple's decisions by
    /// the refund preference sent, per product (``ConsumptionReport``).
    func consumptionReport(_ request: Request) -> Response {
        if let refusal = authorize(request) { return refusal }
        let now = WallClock.milliseconds()
        guard let since = Self.since(request, now: now) else {
            return Self.json(.badRequest, #"{"error":"the only parameter is since (ms since 1970), once"}"#)
        }
        return answer {
            try StateJSON.consumptionReport(since: since, in: try store.roles(), at: now)
        }
    }

    /// `GET /v1/retention/report[?since=MS]`: the answers given to Apple's retention requests
    /// since `since` (default: 30 days ago), by rule and kind, with what the customers did
    /// (``RetentionReport``).
    func retentionReport(_ request: Request) -> Response {
        if let refusal = authorize(request) { return refusal }
        let now = WallClock.milliseconds()
        guard let since = Self.since(request, now: now) else {
            return Self.json(.badRequest, #"{"error":"the only parameter is since (ms since 1970), once"}"#)
        }
        return answer {
            try StateJSON.retentionReport(since: since, in: try store.roles(), at: now)
        }
    }

    /// A report's `since` (ms since 1970; default 30 days before `now`); nil when the query
    /// has anything else, or it twice.
    private static func since(_ request: Request, now: Int64) -> Int64? {
        var since = now - 30 * 86_400_000
        var seen = 0
        for (name, value) in request.uri.queryParameters {
            seen += 1
            guard name == "since", seen == 1, let value = Int64(String(value)), value >= 0 else { return nil }
            since = value
        }
        return since
    }

    /// `GET /v1/consumption/usage?transactionId=…`: what the app recorded of a transaction's
    /// use, 404 when nothing.
    func consumptionUsage(_ request: Request) -> Response {
        if let refusal = authorize(request) { return refusal }
        var ids: [String] = []
        for (name, value) in request.uri.queryParameters {
            guard name == "transactionId", !value.isEmpty, value.count <= 200 else {
                return Self.json(.badRequest, #"{"error":"the only parameter is transactionId, once"}"#)
            }
            ids.append(String(value))
        }
        guard ids.count == 1, let id = ids.first else {
            return Self.json(.badRequest, #"{"error":"the only parameter is transactionId, once"}"#)
        }
        return answer(notFound: #"{"error":"nothing was recorded about this transaction's use"}"#) {
            try StateJSON.consumptionUsage(transactionId: id, in: try store.roles())
        }
    }

    /// `POST /v1/consumption/usage?transactionId=…[&consumptionPercentage=N][&deliveryStatus=…][&sampleContentProvided=true|false][&by=NAME][&at=MS]`:
    /// records how much of a purchase was consumed (milliunits, 0...100000), when the app knows
    /// better than Signet whether it was delivered, and whether this customer was offered a
    /// sample or trial first. A write: only with a token configured.
    func recordConsumptionUsage(_ request: Request) -> Response {
        guard token != nil else {
            return Self.json(.forbidden, #"{"error":"recording usage needs the API token configured (http.api_token)"}"#)
        }
        if let refusal = authorize(request) { return refusal }
        let now = WallClock.milliseconds()
        var id: String?, percentage: Int?, delivery: String?, sample: Bool?, by: String?, at: Int64?
        var seen: Set<String> = []
        for (name, value) in request.uri.queryParameters {
            let name = String(name), value = String(value)
            let valid: Bool
            switch name {
            case "transactionId": id = value; valid = !value.isEmpty && value.count <= 200
            case "consumptionPercentage": percentage = Int(value); valid = percentage != nil
            case "deliveryStatus": delivery = value; valid = true
            case "sampleContentProvided": sample = value == "true" ? true : value == "false" ? false : nil; valid = sample != nil
            case "by": by = value; valid = !value.isEmpty && value.count <= 200
            case "at": at = Int64(value); valid = at.map { $0 >= 0 && $0 <= now + 60_000 } ?? false
            default: valid = false
            }
            guard valid, seen.insert(name).inserted else {
                return Self.json(.badRequest, #"{"error":"parameters: transactionId, consumptionPercentage (milliunits 0 to 100000), deliveryStatus (DELIVERED or UNDELIVERED_*), sampleContentProvided (true or false), by (up to 200 characters), at (ms since 1970, not in the future), each once"}"#)
            }
        }
        guard let id else { return Self.json(.badRequest, #"{"error":"transactionId is required"}"#) }
        let usage = ConsumptionUsage(
            transactionId: id, consumptionPercentage: percentage, deliveryStatus: delivery, sampleContentProvided: sample, at: at ?? now,
            by: "api: " + (by ?? "backend"))
        if let problem = usage.problem { return Self.error(.badRequest, problem) }
        return answer {
            try StateJSON.recordConsumptionUsage(usage, in: try store.roles())
        }
    }

    /// `{"error": message}` with `message` escaped as JSON.
    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let body = (try? JSONSerialization.data(withJSONObject: ["error": message], options: [.sortedKeys]))
            .map { String(decoding: $0, as: UTF8.self) } ?? #"{"error":"bad request"}"#
        return json(status, body)
    }

    private static let oneSubject = #"{"error":"give exactly one of appAccountToken and originalTransactionId"}"#

    /// What a query parameter says of the ledger's subject.
    private enum NamedSubject: Equatable {
        case subject(ConsumptionConsent.Subject)
        /// A subject parameter whose value is wrong (an appAccountToken that is not a UUID).
        case invalid(String)
    }

    /// The ledger subject a query parameter names, nil for any other parameter (or an empty
    /// or oversized originalTransactionId). An appAccountToken is parsed as the UUID Apple types it, so any
    /// spelling of it names the same customer.
    private static func subject(_ name: String, _ value: String) -> NamedSubject? {
        switch name {
        case "appAccountToken":
            guard let token = AppAccountToken(value) else {
                return .invalid(AppAccountToken.Invalid(field: "appAccountToken", text: value).description)
            }
            return .subject(.appAccountToken(token))
        case "originalTransactionId" where !value.isEmpty && value.count <= 200: return .subject(.originalTransactionId(value))
        default: return nil
        }
    }
}
