import AppStoreModels
import Foundation
import SignetFixtures
import Testing

/// The extreme-number corpus covers every numeric field: the field list the probe derives
/// from the models agrees with what Signet's JSON reader actually reads as a number.
@Suite("Extreme-number corpus field list")
struct ExtremeNumberCorpusTests {
    /// Decodes `json` as the model of `kind`.
    static func decodes(_ kind: ExtremeNumberCorpus.Kind, _ object: [String: Any], value: String) -> Bool {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return false }
        let text = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\"@@V@@\"", with: value)
        let bytes = Array(text.utf8)
        switch kind {
        case .notification: return (try? AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: bytes)) != nil
        case .transaction: return (try? AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: bytes)) != nil
        case .renewalInfo: return (try? AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: bytes)) != nil
        }
    }

    static func allFields(_ kind: ExtremeNumberCorpus.Kind) -> [String: NumericFieldProbe.Kind] {
        switch kind {
        case .notification: NumericFieldProbe.fields(of: ResponseBodyV2DecodedPayload.self)
        case .transaction: NumericFieldProbe.fields(of: JWSTransactionDecodedPayload.self)
        case .renewalInfo: NumericFieldProbe.fields(of: JWSRenewalInfoDecodedPayload.self)
        }
    }

    @Test("the probe finds the numeric fields Apple documents")
    func knownFields() {
        let fields = ExtremeNumberCorpus.fields
        let notification = Set(fields[.notification] ?? [])
        for field in ["signedDate", "data.appAppleId", "data.status", "summary.failedCount", "summary.succeededCount",
                      "externalPurchaseToken.tokenCreationDate", "externalPurchaseToken.tokenExpirationDate", "appData.appAppleId"] {
            #expect(notification.contains(field), "notification: \(field) missing from \(notification.sorted())")
        }
        let transaction = Set(fields[.transaction] ?? [])
        for field in ["purchaseDate", "originalPurchaseDate", "expiresDate", "revocationDate", "signedDate", "price",
                      "quantity", "revocationReason", "revocationPercentage", "offerType", "commitmentInfo.commitmentPrice",
                      "advancedCommerceInfo.items[].price"] {
            #expect(transaction.contains(field), "transaction: \(field) missing from \(transaction.sorted())")
        }
        let renewal = Set(fields[.renewalInfo] ?? [])
        for field in ["renewalDate", "gracePeriodExpiresDate", "signedDate", "recentSubscriptionStartDate", "renewalPrice",
                      "autoRenewStatus", "expirationIntent", "priceIncreaseStatus", "offerType"] {
            #expect(renewal.contains(field), "renewal info: \(field) missing from \(renewal.sorted())")
        }
        // Strings are not numbers (webOrderLineItemId and storefrontId are strings in Apple's schema).
        #expect(!transaction.contains("webOrderLineItemId"))
        #expect(!transaction.contains("transactionId"))
    }

    /// Every probed field is read as a number by the fast reader exactly when the probe says
    /// so: a number there decodes and a string there does not (for numeric fields), and a
    /// number in a string or bool field is refused. A numeric field the probe missed would
    /// fail the second half.
    @Test("probe and JSON reader agree on every field", arguments: ExtremeNumberCorpus.Kind.allCases)
    func probeMatchesReader(kind: ExtremeNumberCorpus.Kind) {
        let fields = Self.allFields(kind)
        #expect(fields.count > 5)
        for (field, fieldKind) in fields where fieldKind != .object {
            let object = ExtremeNumberCorpus.setting("@@V@@", at: ExtremeNumberCorpus.components(field)[...], in: nil)
            let numberAccepted = Self.decodes(kind, object, value: "1")
            let stringAccepted = Self.decodes(kind, object, value: "\"x\"")
            switch fieldKind {
            case .number:
                #expect(numberAccepted, "\(kind) \(field): the probe says number, the reader refuses 1")
                #expect(!stringAccepted, "\(kind) \(field): the probe says number, the reader takes a string")
            case .string, .bool:
                #expect(!numberAccepted, "\(kind) \(field): the reader takes a number but the corpus skips the field")
            case .object:
                break
            }
        }
    }
}
