import AppStoreModels
import Foundation
import Testing

@Suite struct OpenValueTests {
    @Test func unknownValuesDecodeAndRoundTrip() throws {
        let json = Array("""
        {"notificationType":"SOMETHING_NEW","subtype":"BRAND_NEW","data":{"environment":"Staging","status":9,
         "consumptionRequestReason":"NEW_REASON"}}
        """.utf8)
        let n = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: json)
        #expect(n.notificationType == NotificationType(rawValue: "SOMETHING_NEW"))
        #expect(n.notificationType?.isDocumented == false)
        #expect(n.subtype?.rawValue == "BRAND_NEW")
        #expect(n.data?.environment?.rawValue == "Staging")
        #expect(n.data?.status == SubscriptionStatus(rawValue: 9))
        #expect(n.data?.status?.isDocumented == false)
        #expect(n.data?.consumptionRequestReason?.rawValue == "NEW_REASON")
        let again = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: AppStoreJSON.encode(n))
        #expect(again == n)
        #expect(try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(json)) == n)

        let t = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: Array("""
        {"type":"Hyper Subscription","offerType":77,"revocationType":"REFUND_SOMETIMES","inAppOwnershipType":"BORROWED"}
        """.utf8))
        #expect(t.type?.rawValue == "Hyper Subscription")
        #expect(t.offerType?.rawValue == 77)
        #expect(t.revocationType?.rawValue == "REFUND_SOMETIMES")
        #expect(t.inAppOwnershipType?.rawValue == "BORROWED")
    }

    @Test func documentedValuesAreKnown() {
        #expect(AppStoreEnvironment.production.rawValue == "Production")
        #expect(AppStoreEnvironment.sandbox.rawValue == "Sandbox")
        #expect(AppStoreEnvironment.xcode.rawValue == "Xcode")
        #expect(AppStoreEnvironment.localTesting.rawValue == "LocalTesting")
        #expect(SubscriptionStatus.billingGracePeriod.rawValue == 4)
        #expect(OfferType.winBackOffer.rawValue == 4)
        #expect(ExpirationIntent.productNotAvailable.rawValue == 4)
        let literal: NotificationType = "DID_RENEW"
        #expect(literal == .didRenew)
        #expect(literal.isDocumented)
        #expect(NotificationType.documentedValues.count == 23)
        #expect(Subtype.documentedValues.count == 19)
    }

    @Test func documentedCombinationsCoverEveryTypeAndSubtype() {
        let combinations = NotificationCombination.documented
        #expect(Set(combinations).count == combinations.count, "no duplicates")
        #expect(Set(combinations.map(\.notificationType)) == Set(NotificationType.documentedValues))
        #expect(Set(combinations.compactMap(\.subtype)) == Set(Subtype.documentedValues))
        let table = NotificationType.documentedSubtypes
        #expect(table.count == NotificationType.documentedValues.count)
        #expect(table[.subscribed] == [.initialBuy, .resubscribe])
        #expect(table[.didRenew] == [nil, .billingRecovery])
        #expect(table[.test] == [nil])
        #expect(table[.externalPurchaseToken] == [.unreported, .created, .activeTokenReminder])
        #expect(NotificationType.expired.documents(subtype: .productNotForSale))
        #expect(!NotificationType.expired.documents(subtype: nil))
        #expect(!NotificationType.refund.documents(subtype: .summary))
        #expect(NotificationCombination(.renewalExtension, .summary).description == "RENEWAL_EXTENSION/SUMMARY")
    }
}

@Suite struct AppleTimestampTests {
    @Test func integerAndFractionalMilliseconds() throws {
        let t = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self,
                                        from: Array(#"{"purchaseDate":1697679936049.7297,"expiresDate":1700358336049,"signedDate":-1.9,"revocationDate":1.6976799360497297E12}"#.utf8))
        #expect(t.purchaseDate?.millisecondsSince1970 == 1_697_679_936_049)
        #expect(t.expiresDate?.millisecondsSince1970 == 1_700_358_336_049)
        #expect(t.signedDate?.millisecondsSince1970 == -1, "truncates toward zero")
        #expect(t.revocationDate?.millisecondsSince1970 == 1_697_679_936_049)
        let viaFoundation = try JSONDecoder().decode(AppleTimestamp.self, from: Data("1697679936049.7297".utf8))
        #expect(viaFoundation.millisecondsSince1970 == 1_697_679_936_049)
        #expect(try JSONDecoder().decode(AppleTimestamp.self, from: Data("-1.9".utf8)).millisecondsSince1970 == -1)
    }

    @Test func dateConversionAndOrdering() throws {
        let a = AppleTimestamp(millisecondsSince1970: 1_698_148_900_000)
        #expect(a.date == Date(timeIntervalSince1970: 1_698_148_900))
        #expect(AppleTimestamp(Date(timeIntervalSince1970: 1_698_148_900.123_9)) == AppleTimestamp(millisecondsSince1970: 1_698_148_900_123))
        #expect(AppleTimestamp(Date(timeIntervalSince1970: .infinity)) == nil)
        #expect(a < AppleTimestamp(millisecondsSince1970: 1_698_148_900_001))
        #expect([AppleTimestamp(millisecondsSince1970: 3), AppleTimestamp(millisecondsSince1970: 1)].max()?.millisecondsSince1970 == 3)
        #expect(a.description == "2023-10-24T12:01:40.000Z")
        #expect(String(decoding: try AppStoreJSON.encode(a), as: UTF8.self) == "1698148900000")
    }

    @Test func outOfRangeTimestampsThrow() {
        for json in [#"{"signedDate":1e300}"#, #"{"signedDate":9223372036854775808}"#, #"{"signedDate":-9.3e18}"#, #"{"signedDate":"1698148900000"}"#] {
            #expect(throws: AppStoreJSONError.self, "\(json)") {
                try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: Array(json.utf8))
            }
        }
    }
}
