import AppStoreModels
import Foundation

/// Input lines with an extreme number in one numeric field each, for every numeric field of
/// every payload kind (issue 12): the notification (including `data`, `summary`,
/// `externalPurchaseToken`, `appData`), the transaction and the renewal info.
///
/// Generated, not committed: the field list comes from the models themselves
/// (``NumericFieldProbe``), so a numeric field added later is in the corpus without anyone
/// remembering to add it. Each line starts from a valid Apple-shaped payload (valid for
/// the configured bundle id, `Sandbox`, app Apple ID and clock) and changes exactly one
/// number, so with a trusted signer the value travels past the signature and chain checks
/// into the claims checks, decoding and the state machine.
public struct ExtremeNumberCorpus: Sendable {
    /// The values put in each field, as JSON number text: the edges of Int64 and around
    /// them, the edges of Int32, doubles, and numbers no fixed-width type holds.
    public static let values: [String] = [
        "-9223372036854775808", "-9223372036854775807", "-9223372036854774810", "-9223372036854775809",
        "-1", "0", "-0", "-0.0",
        "9223372036854775806", "9223372036854775807", "9223372036854775808", "18446744073709551616",
        "2147483647", "2147483648", "-2147483649", "4294967296",
        "9007199254740993", "-9007199254740993",
        "1e308", "-1e308", "1e999", "-1e999", "1.5", "-1.5", "0.5e-400", "1E+2", "9.3e18", "-9.3e18",
        "9223372036854775807.5", "-9223372036854775808.9",
        "1" + String(repeating: "0", count: 400),
        "-" + String(repeating: "9", count: 400),
        "0." + String(repeating: "0", count: 400) + "1",
    ]

    /// The payload a line carries the extreme value in.
    public enum Kind: String, Sendable, CaseIterable {
        case notification, transaction, renewalInfo
    }

    /// How the payload reaches Signet.
    public enum Form: String, Sendable {
        /// `{"signedPayload": notification}` with the value in the notification itself.
        case notification
        /// `{"signedPayload": notification}` whose `data.signedTransactionInfo` /
        /// `data.signedRenewalInfo` carries the value: the path into the state machine.
        case nested
        /// `{"signedTransactionInfo": …}` / `{"signedRenewalInfo": …}` on its own.
        case standalone
    }

    /// One corpus line.
    public struct Line: Sendable, CustomStringConvertible {
        public let kind: Kind
        public let form: Form
        /// The field path, e.g. `advancedCommerceInfo.items[].price`.
        public let field: String
        /// The number text put there; nil for the unchanged base line.
        public let value: String?
        /// The input line (no newline).
        public let bytes: [UInt8]
        public var description: String { "\(kind.rawValue)/\(form.rawValue) \(field)=\(value ?? "base")" }
    }

    /// The numeric field paths of each kind, derived from the models.
    public static var fields: [Kind: [String]] {
        [
            .notification: NumericFieldProbe.numericPaths(of: ResponseBodyV2DecodedPayload.self),
            .transaction: NumericFieldProbe.numericPaths(of: JWSTransactionDecodedPayload.self),
            .renewalInfo: NumericFieldProbe.numericPaths(of: JWSRenewalInfoDecodedPayload.self),
        ]
    }

    public let bundleId: String
    public let appAppleId: Int64
    /// The instant (ms since 1970) the base payloads are signed at; use the verifier's clock.
    public let now: Int64

    public init(bundleId: String = "com.example.signet", appAppleId: Int64 = 4242, now: Int64) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.now = now
    }

    /// Every field of every kind with every value, signed by `signer` (nested payloads too).
    /// Each notification gets its own `notificationUUID` and transaction ids, so no line is
    /// a duplicate of another. The unchanged base lines come first (`value == nil`).
    public func lines(signedBy signer: JWSSigner, values: [String] = ExtremeNumberCorpus.values) throws -> [Line] {
        var counter = 0
        var out: [Line] = []
        let fields = Self.fields
        func add(_ kind: Kind, _ field: String, _ value: String?) throws {
            counter += 1
            let forms: [Form] = kind == .notification ? [.notification] : [.nested, .standalone]
            for form in forms {
                out.append(try line(kind: kind, form: form, field: field, value: value, serial: counter, signer: signer))
            }
        }
        for kind in Kind.allCases {
            try add(kind, "signedDate", nil)
        }
        for kind in Kind.allCases {
            for field in fields[kind] ?? [] {
                for value in values { try add(kind, field, value) }
            }
        }
        return out
    }

    /// One line: the base payload of `kind` with `value` at `field`, signed.
    public func line(kind: Kind, form: Form, field: String, value: String?, serial: Int, signer: JWSSigner) throws -> Line {
        var object = try basePayload(kind, field: field, serial: serial, signer: signer)
        let placeholder = "@@EXTREME@@"
        if value != nil { object = Self.setting(placeholder, at: Self.components(field)[...], in: object) }
        var payload = try Self.json(object)
        if let value {
            payload = Array(String(decoding: payload, as: UTF8.self).replacingOccurrences(of: "\"\(placeholder)\"", with: value).utf8)
        }
        let bytes = try signedLine(kind: kind, form: form, payload: payload, serial: serial, signer: signer)
        return Line(kind: kind, form: form, field: field, value: value, bytes: bytes)
    }

    /// An input line carrying `payload` (any bytes) as the payload of `kind`, signed by
    /// `signer`; in the nested form the notification around it, and the other nested
    /// payload, are the valid bases. The fuzz target uses this to put mutated payloads
    /// behind a trusted signature.
    public func signedLine(kind: Kind, form: Form, payload: [UInt8], serial: Int, signer: JWSSigner) throws -> [UInt8] {
        switch (kind, form) {
        case (.transaction, .standalone):
            return FixtureSet.envelope("signedTransactionInfo", try signer.sign(payload: payload))
        case (.renewalInfo, .standalone):
            return FixtureSet.envelope("signedRenewalInfo", try signer.sign(payload: payload))
        case (.notification, _):
            return FixtureSet.envelope("signedPayload", try signer.sign(payload: payload))
        case (.transaction, _), (.renewalInfo, _):
            var notification = notificationBase(field: "data", serial: serial)
            var data = notification["data"] as? [String: Any] ?? [:]
            let nested = try signer.sign(payload: payload)
            data["signedTransactionInfo"] = kind == .transaction ? nested : try signer.sign(payload: Self.json(transactionBase(serial: serial)))
            data["signedRenewalInfo"] = kind == .renewalInfo ? nested : try signer.sign(payload: Self.json(renewalBase(serial: serial)))
            notification["data"] = data
            return FixtureSet.envelope("signedPayload", try signer.sign(payload: Self.json(notification)))
        }
    }

    /// The valid base payload of `kind` (for a notification: of the type whose body holds
    /// `field`, with signed nested payloads when it has `data`).
    func basePayload(_ kind: Kind, field: String, serial: Int, signer: JWSSigner) throws -> [String: Any] {
        switch kind {
        case .transaction: return transactionBase(serial: serial)
        case .renewalInfo: return renewalBase(serial: serial)
        case .notification:
            var notification = notificationBase(field: field, serial: serial)
            if var data = notification["data"] as? [String: Any] {
                data["signedTransactionInfo"] = try signer.sign(payload: Self.json(transactionBase(serial: serial)))
                data["signedRenewalInfo"] = try signer.sign(payload: Self.json(renewalBase(serial: serial)))
                notification["data"] = data
            }
            return notification
        }
    }

    static func json(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    // MARK: base payloads

    private static let month: Int64 = 30 * 86_400_000

    private func transactionBase(serial: Int) -> [String: Any] {
        [
            "transactionId": "3\(serial)", "originalTransactionId": "2\(serial)", "webOrderLineItemId": "1\(serial)",
            "bundleId": bundleId, "productId": "pro.monthly", "subscriptionGroupIdentifier": "21000001",
            "purchaseDate": now - 1000, "originalPurchaseDate": now - 1000, "expiresDate": now + Self.month,
            "quantity": 1, "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
            "signedDate": now, "environment": "Sandbox", "transactionReason": "PURCHASE",
            "storefront": "USA", "storefrontId": "143441", "currency": "USD", "price": 9990,
        ]
    }

    private func renewalBase(serial: Int) -> [String: Any] {
        [
            "originalTransactionId": "2\(serial)", "autoRenewProductId": "pro.monthly", "productId": "pro.monthly",
            "autoRenewStatus": 1, "signedDate": now, "environment": "Sandbox",
            "recentSubscriptionStartDate": now - 1000, "renewalDate": now + Self.month,
            "currency": "USD", "renewalPrice": 9990,
        ]
    }

    /// A notification of the type whose body holds `field`: `summary.*` in a
    /// RENEWAL_EXTENSION/SUMMARY, `externalPurchaseToken.*` in an EXTERNAL_PURCHASE_TOKEN,
    /// `appData.*` in a RESCIND_CONSENT, anything else in a DID_RENEW with `data`.
    private func notificationBase(field: String, serial: Int) -> [String: Any] {
        var top: [String: Any] = [
            "notificationUUID": String(format: "6b1d2c3e-0000-4000-8000-%012d", serial),
            "version": "2.0", "signedDate": now,
        ]
        switch Self.components(field).first {
        case "summary":
            top["notificationType"] = "RENEWAL_EXTENSION"
            top["subtype"] = "SUMMARY"
            top["summary"] = [
                "requestIdentifier": "req-\(serial)", "environment": "Sandbox", "appAppleId": appAppleId,
                "bundleId": bundleId, "productId": "pro.monthly", "storefrontCountryCodes": ["USA"],
                "failedCount": 0, "succeededCount": 5,
            ] as [String: Any]
        case "externalPurchaseToken":
            top["notificationType"] = "EXTERNAL_PURCHASE_TOKEN"
            top["subtype"] = "UNREPORTED"
            top["externalPurchaseToken"] = [
                "externalPurchaseId": "SANDBOX_\(serial)", "tokenCreationDate": now - 1000, "appAppleId": appAppleId,
                "bundleId": bundleId, "tokenType": "SERVICES",
            ] as [String: Any]
        case "appData":
            top["notificationType"] = "RESCIND_CONSENT"
            top["appData"] = ["appAppleId": appAppleId, "bundleId": bundleId, "environment": "Sandbox"] as [String: Any]
        default:
            top["notificationType"] = "DID_RENEW"
            top["data"] = ["appAppleId": appAppleId, "bundleId": bundleId, "environment": "Sandbox", "status": 1] as [String: Any]
        }
        return top
    }

    // MARK: paths

    /// `a.b[].c` → `["a", "b", "[]", "c"]`.
    public static func components(_ path: String) -> [String] {
        var out: [String] = []
        for segment in path.split(separator: ".") {
            var name = Substring(segment)
            var arrays = 0
            while name.hasSuffix("[]") {
                name = name.dropLast(2)
                arrays += 1
            }
            out.append(String(name))
            out.append(contentsOf: repeatElement("[]", count: arrays))
        }
        return out
    }

    /// `node` with `leaf` at `path`, creating objects (and one-element arrays) on the way.
    public static func setting(_ leaf: Any, at path: ArraySlice<String>, in node: Any?) -> [String: Any] {
        (settingAny(leaf, at: path, in: node) as? [String: Any]) ?? [:]
    }

    private static func settingAny(_ leaf: Any, at path: ArraySlice<String>, in node: Any?) -> Any {
        guard let head = path.first else { return leaf }
        let rest = path.dropFirst()
        if head == "[]" {
            var array = node as? [Any] ?? []
            let element = settingAny(leaf, at: rest, in: array.first)
            if array.isEmpty { array.append(element) } else { array[0] = element }
            return array
        }
        var object = node as? [String: Any] ?? [:]
        object[head] = settingAny(leaf, at: rest, in: object[head])
        return object
    }
}
