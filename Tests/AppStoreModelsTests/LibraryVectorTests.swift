import AppStoreModels
import Foundation
import Testing

/// The unsigned payloads from Apple's server library tests, with the values its tests assert.
@Suite struct LibraryVectorTests {
    private func notification(_ name: String) throws -> ResponseBodyV2DecodedPayload {
        try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Fixtures.payload(name))
    }

    @Test func subscribedNotification() throws {
        let n = try notification("signedNotification.json")
        #expect(n.notificationType == .subscribed)
        #expect(n.subtype == .initialBuy)
        #expect(n.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(n.version == "2.0")
        #expect(n.signedDate == AppleTimestamp(millisecondsSince1970: 1_698_148_900_000))
        #expect(n.signedDate?.date == Date(timeIntervalSince1970: 1_698_148_900))
        #expect(n.summary == nil)
        #expect(n.externalPurchaseToken == nil)
        #expect(n.appData == nil)
        let data = try #require(n.data)
        #expect(data.environment == .localTesting)
        #expect(data.environment?.rawValue == "LocalTesting")
        #expect(data.appAppleId == 41234)
        #expect(data.bundleId == "com.example")
        #expect(data.bundleVersion == "1.2.3")
        #expect(data.signedTransactionInfo == "signed_transaction_info_value")
        #expect(data.signedRenewalInfo == "signed_renewal_info_value")
        #expect(data.status == .active)
        #expect(data.status?.rawValue == 1)
        #expect(data.consumptionRequestReason == nil)
        #expect(n.effectiveBundleId == "com.example")
        #expect(n.effectiveAppAppleId == 41234)
        #expect(n.effectiveEnvironment == .localTesting)
    }

    @Test func consumptionRequestNotification() throws {
        let n = try notification("signedConsumptionRequestNotification.json")
        #expect(n.notificationType == .consumptionRequest)
        #expect(n.subtype == nil)
        #expect(n.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        let data = try #require(n.data)
        #expect(data.appAppleId == 41234)
        #expect(data.status == .active)
        #expect(data.consumptionRequestReason == .unintendedPurchase)
        #expect(data.consumptionRequestReason?.rawValue == "UNINTENDED_PURCHASE")
    }

    @Test func summaryNotification() throws {
        let n = try notification("signedSummaryNotification.json")
        #expect(n.notificationType == .renewalExtension)
        #expect(n.subtype == .summary)
        #expect(n.data == nil)
        #expect(n.externalPurchaseToken == nil)
        let summary = try #require(n.summary)
        #expect(summary.environment == .localTesting)
        #expect(summary.appAppleId == 41234)
        #expect(summary.bundleId == "com.example")
        #expect(summary.productId == "com.example.product")
        #expect(summary.requestIdentifier == "efb27071-45a4-4aca-9854-2a1e9146f265")
        #expect(summary.storefrontCountryCodes == ["CAN", "USA", "MEX"])
        #expect(summary.succeededCount == 5)
        #expect(summary.failedCount == 2)
        #expect(n.effectiveBundleId == "com.example")
        #expect(n.effectiveEnvironment == .localTesting)
    }

    @Test func externalPurchaseTokenNotification() throws {
        let n = try notification("signedExternalPurchaseTokenNotification.json")
        #expect(n.notificationType == .externalPurchaseToken)
        #expect(n.subtype == .unreported)
        #expect(n.data == nil)
        #expect(n.summary == nil)
        let token = try #require(n.externalPurchaseToken)
        #expect(token.externalPurchaseId == "b2158121-7af9-49d4-9561-1f588205523e")
        #expect(token.tokenCreationDate == 1_698_148_950_000)
        #expect(token.appAppleId == 55555)
        #expect(token.bundleId == "com.example")
        #expect(token.environment == .production)
        #expect(n.effectiveEnvironment == .production)
        #expect(n.effectiveAppAppleId == 55555)
    }

    @Test func externalPurchaseTokenSandboxNotification() throws {
        let n = try notification("signedExternalPurchaseTokenSandboxNotification.json")
        let token = try #require(n.externalPurchaseToken)
        #expect(token.externalPurchaseId == "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e")
        #expect(token.tokenCreationDate == 1_698_148_950_000)
        #expect(token.environment == .sandbox)
        #expect(n.effectiveEnvironment == .sandbox)
    }

    @Test func rescindConsentNotification() throws {
        let n = try notification("signedRescindConsentNotification.json")
        #expect(n.notificationType == .rescindConsent)
        #expect(n.subtype == nil)
        #expect(n.data == nil)
        #expect(n.summary == nil)
        #expect(n.externalPurchaseToken == nil)
        let appData = try #require(n.appData)
        #expect(appData.environment == .localTesting)
        #expect(appData.appAppleId == 41234)
        #expect(appData.bundleId == "com.example")
        #expect(appData.signedAppTransactionInfo == "signed_app_transaction_info_value")
        #expect(n.effectiveBundleId == "com.example")
    }

    @Test func bareAppData() throws {
        let appData = try AppStoreJSON.decode(AppData.self, from: Fixtures.payload("appData.json"))
        #expect(appData.appAppleId == 987_654_321)
        #expect(appData.bundleId == "com.example")
        #expect(appData.environment == .sandbox)
        #expect(appData.signedAppTransactionInfo == "signed-app-transaction-info")
    }

    private func expectCommonTransactionFields(_ t: JWSTransactionDecodedPayload) {
        #expect(t.originalTransactionId == "12345")
        #expect(t.transactionId == "23456")
        #expect(t.webOrderLineItemId == "34343")
        #expect(t.bundleId == "com.example")
        #expect(t.productId == "com.example.product")
        #expect(t.subscriptionGroupIdentifier == "55555")
        #expect(t.originalPurchaseDate?.millisecondsSince1970 == 1_698_148_800_000)
        #expect(t.purchaseDate?.millisecondsSince1970 == 1_698_148_900_000)
        #expect(t.revocationDate?.millisecondsSince1970 == 1_698_148_950_000)
        #expect(t.expiresDate?.millisecondsSince1970 == 1_698_149_000_000)
        #expect(t.quantity == 1)
        #expect(t.type == .autoRenewableSubscription)
        #expect(t.type?.rawValue == "Auto-Renewable Subscription")
        #expect(t.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(t.inAppOwnershipType == .purchased)
        #expect(t.signedDate?.millisecondsSince1970 == 1_698_148_900_000)
        #expect(t.revocationReason == .refundedDueToIssue)
        #expect(t.revocationReason?.rawValue == 1)
        #expect(t.offerIdentifier == "abc.123")
        #expect(t.isUpgraded == true)
        #expect(t.offerType == .introductoryOffer)
        #expect(t.storefront == "USA")
        #expect(t.storefrontId == "143441")
        #expect(t.transactionReason == .purchase)
        #expect(t.environment == .localTesting)
        #expect(t.price == 10990)
        #expect(t.currency == "USD")
        #expect(t.offerDiscountType == .payAsYouGo)
        #expect(t.appTransactionId == "71134")
        #expect(t.offerPeriod == "P1Y")
    }

    @Test func transaction() throws {
        let t = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: Fixtures.payload("signedTransaction.json"))
        expectCommonTransactionFields(t)
        #expect(t.revocationType == nil)
        #expect(t.revocationPercentage == nil)
        let info = try #require(t.advancedCommerceInfo)
        #expect(info.descriptors?.description == "Premium Plan")
        #expect(info.descriptors?.displayName == "Premium")
        #expect(info.estimatedTax == 1500)
        #expect(info.period == .p1M)
        #expect(info.requestReferenceId == "ref-12345")
        #expect(info.taxCode == "TAX_CODE_1")
        #expect(info.taxExclusivePrice == 8490)
        #expect(info.taxRate == "0.15")
        let items = try #require(info.items)
        #expect(items.count == 1)
        #expect(items[0].sku == "com.example.sku.premium")
        #expect(items[0].description == "Premium feature")
        #expect(items[0].displayName == "Premium Feature")
        #expect(items[0].price == 9990)
        #expect(items[0].revocationDate?.millisecondsSince1970 == 1_698_149_200_000)
        let refunds = try #require(items[0].refunds)
        #expect(refunds.count == 1)
        #expect(refunds[0].refundAmount == 5000)
        #expect(refunds[0].refundDate?.millisecondsSince1970 == 1_698_149_100_000)
        #expect(refunds[0].refundReason == .fulfillmentIssue)
        #expect(refunds[0].refundType == .prorated)
        #expect(t.billingPlanType == .monthly)
        let commitment = try #require(t.commitmentInfo)
        #expect(commitment.billingPeriodNumber == 3)
        #expect(commitment.commitmentExpiresDate?.millisecondsSince1970 == 1_698_150_000_000)
        #expect(commitment.commitmentPrice == 119_880)
        #expect(commitment.totalBillingPeriods == 12)
    }

    @Test func transactionWithRevocation() throws {
        let t = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: Fixtures.payload("signedTransactionWithRevocation.json"))
        expectCommonTransactionFields(t)
        #expect(t.revocationType == .refundProrated)
        #expect(t.revocationType?.rawValue == "REFUND_PRORATED")
        #expect(t.revocationPercentage == 50000)
        #expect(t.advancedCommerceInfo == nil)
    }

    @Test func renewalInfo() throws {
        let r = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: Fixtures.payload("signedRenewalInfo.json"))
        #expect(r.expirationIntent == .customerCancelled)
        #expect(r.originalTransactionId == "12345")
        #expect(r.autoRenewProductId == "com.example.product.2")
        #expect(r.productId == "com.example.product")
        #expect(r.autoRenewStatus == .on)
        #expect(r.isInBillingRetryPeriod == true)
        #expect(r.priceIncreaseStatus == .customerHasNotResponded)
        #expect(r.gracePeriodExpiresDate?.millisecondsSince1970 == 1_698_148_900_000)
        #expect(r.offerType == .promotionalOffer)
        #expect(r.offerIdentifier == "abc.123")
        #expect(r.signedDate?.millisecondsSince1970 == 1_698_148_800_000)
        #expect(r.environment == .localTesting)
        #expect(r.recentSubscriptionStartDate?.millisecondsSince1970 == 1_698_148_800_000)
        #expect(r.renewalDate?.millisecondsSince1970 == 1_698_148_850_000)
        #expect(r.renewalPrice == 9990)
        #expect(r.currency == "USD")
        #expect(r.offerDiscountType == .payAsYouGo)
        #expect(r.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        #expect(r.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(r.appTransactionId == "71134")
        #expect(r.offerPeriod == "P1Y")
        let info = try #require(r.advancedCommerceInfo)
        #expect(info.consistencyToken == "token-abc-123")
        #expect(info.descriptors?.description == "Premium Plan")
        #expect(info.descriptors?.displayName == "Premium")
        #expect(info.period == .p1M)
        #expect(info.requestReferenceId == "ref-12345")
        #expect(info.taxCode == "TAX_CODE_1")
        let item = try #require(info.items?.first)
        #expect(info.items?.count == 1)
        #expect(item.sku == "com.example.sku.premium")
        #expect(item.description == "Premium feature")
        #expect(item.displayName == "Premium Feature")
        #expect(item.price == 9990)
        let increase = try #require(item.priceIncreaseInfo)
        #expect(increase.dependentSKUs == ["com.example.sku.1", "com.example.sku.2"])
        #expect(increase.price == 12990)
        #expect(increase.status == .pending)
        let commitment = try #require(r.commitmentInfo)
        #expect(commitment.commitmentAutoRenewProductId == "com.example.product.commitment")
        #expect(commitment.commitmentAutoRenewStatus == .on)
        #expect(commitment.commitmentRenewalBillingPlanType == .monthly)
        #expect(commitment.commitmentRenewalDate?.millisecondsSince1970 == 1_698_149_500_000)
        #expect(commitment.commitmentRenewalPrice == 9990)
        #expect(r.renewalBillingPlanType == .monthly)
    }

    /// The fast scanner and Foundation's `JSONDecoder` (through the models' `Decodable`
    /// conformances) must agree on every fixture, and encoding must round-trip.
    @Test(arguments: [
        "signedNotification.json", "signedConsumptionRequestNotification.json", "signedSummaryNotification.json",
        "signedExternalPurchaseTokenNotification.json", "signedExternalPurchaseTokenSandboxNotification.json",
        "signedRescindConsentNotification.json",
    ])
    func fastAndFoundationAgreeOnNotifications(_ name: String) throws {
        let bytes = try Fixtures.payload(name)
        let fast = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: bytes)
        let foundation = try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(bytes))
        #expect(fast == foundation)
        let reencoded = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: AppStoreJSON.encode(fast))
        #expect(reencoded == fast)
    }

    @Test func fastAndFoundationAgreeOnTransactionsAndRenewals() throws {
        for name in ["signedTransaction.json", "signedTransactionWithRevocation.json"] {
            let bytes = try Fixtures.payload(name)
            let fast = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: bytes)
            #expect(fast == (try JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(bytes))))
            #expect(fast == (try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: AppStoreJSON.encode(fast))))
        }
        let bytes = try Fixtures.payload("signedRenewalInfo.json")
        let fast = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: bytes)
        #expect(fast == (try JSONDecoder().decode(JWSRenewalInfoDecodedPayload.self, from: Data(bytes))))
        #expect(fast == (try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: AppStoreJSON.encode(fast))))
        // The encoder keeps Apple's key spelling for advanced commerce items.
        let encoded = String(decoding: try AppStoreJSON.encode(fast), as: UTF8.self)
        #expect(encoded.contains("\"SKU\":\"com.example.sku.premium\""))
    }

    @Test func mockSignedDataPayloads() throws {
        // The payloads inside the library's signed test vectors (decoded without verification).
        func payload(_ name: String) throws -> [UInt8] {
            try Fixtures.jwsPayload(String(decoding: Fixtures.bytes("apple-library-vectors/mock_signed_data/\(name)"), as: UTF8.self))
        }
        let test = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: payload("testNotification"))
        #expect(test.notificationType == .test)
        #expect(test.data?.appAppleId == 1234)
        #expect(test.data?.environment == .sandbox)
        #expect(test.signedDate?.millisecondsSince1970 == 1_681_314_324_000)
        let wrong = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: payload("wrongBundleId"))
        #expect(wrong.data?.bundleId == "com.example.wrong")
        #expect(wrong.signedDate == nil)
        let transaction = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: payload("transactionInfo"))
        #expect(transaction.environment == .sandbox)
        #expect(transaction.bundleId == "com.example")
        let renewal = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: payload("renewalInfo"))
        #expect(renewal.environment == .sandbox)
        #expect(renewal.signedDate?.millisecondsSince1970 == 1_672_956_154_000)
    }

    @Test func xcodePayloadsWithFractionalDates() throws {
        func payload(_ name: String) throws -> [UInt8] {
            try Fixtures.jwsPayload(String(decoding: Fixtures.bytes("apple-library-vectors/xcode/\(name)"), as: UTF8.self))
        }
        let t = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: payload("xcode-signed-transaction"))
        #expect(t.environment == .xcode)
        #expect(t.bundleId == "com.example.naturelab.backyardbirds.example")
        #expect(t.transactionId == "0")
        #expect(t.productId == "pass.premium")
        #expect(t.type == .autoRenewableSubscription)
        #expect(t.offerType == .introductoryOffer)
        #expect(t.storefront == "USA")
        #expect(t.storefrontId == "143441")
        // 1700358336049.xxx ms truncates to 1700358336049.
        #expect(t.expiresDate?.millisecondsSince1970 == 1_700_358_336_049)
        #expect(t == (try JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(payload("xcode-signed-transaction")))))
        let r = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: payload("xcode-signed-renewal-info"))
        #expect(r.autoRenewStatus == .on)
        #expect(r.productId == "pass.premium")
        #expect(r.environment == .xcode)
    }
}
