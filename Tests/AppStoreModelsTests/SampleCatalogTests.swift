#if canImport(SignetFixtures)
import AppStoreModels
import SignetFixtures
import Testing

/// The sample catalog must produce payloads that decode with these models and agree with
/// each other and with the event they describe.
@Suite struct SampleCatalogTests {
    private func cycle(seed: UInt64, environment: AppStoreEnvironment = .sandbox, appAppleId: Int64? = 1234) -> [SampleNotification] {
        var generator = SampleNotificationGenerator(seed: seed, bundleId: "com.example.app", environment: environment, appAppleId: appAppleId)
        return generator.nextCycle() + generator.nextCycle()
    }

    @Test func deterministicPerSeed() {
        let a = cycle(seed: 42), b = cycle(seed: 42), c = cycle(seed: 43)
        #expect(a == b)
        #expect(a != c)
        #expect(a.map { $0.notificationJSON(signedTransactionInfo: "x", signedRenewalInfo: "y") }
                == b.map { $0.notificationJSON(signedTransactionInfo: "x", signedRenewalInfo: "y") })
    }

    @Test func coversEveryCombinationInOrder() {
        let samples = cycle(seed: 7)
        let documented = NotificationCombination.documented
        #expect(samples.map(\.combination) == documented + documented)
        let dates = samples.map(\.signedDate)
        #expect(zip(dates, dates.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test(arguments: [AppStoreEnvironment.sandbox, .production])
    func payloadsDecodeAndAgree(environment: AppStoreEnvironment) throws {
        for sample in cycle(seed: 99, environment: environment, appAppleId: environment == .production ? 6_450_284_872 : nil) {
            let label = "\(sample.combination)"
            let signedTransaction = sample.transactionPayload == nil ? nil : "header.transaction.signature"
            let signedRenewal = sample.renewalPayload == nil ? nil : "header.renewal.signature"
            let n = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self,
                                            from: sample.notificationJSON(signedTransactionInfo: signedTransaction, signedRenewalInfo: signedRenewal))
            #expect(n.notificationType == sample.combination.notificationType, "\(label)")
            #expect(n.subtype == sample.combination.subtype, "\(label)")
            #expect(n.notificationUUID == sample.notificationUUID, "\(label)")
            #expect(n.version == "2.0", "\(label)")
            #expect(n.signedDate == sample.signedDate, "\(label)")
            #expect(n.effectiveBundleId == "com.example.app", "\(label)")
            #expect(n.effectiveEnvironment == environment, "\(label)")
            #expect(n.effectiveAppAppleId == sample.appAppleId, "\(label)")
            #expect(n.data?.signedTransactionInfo == signedTransaction, "\(label)")
            #expect(n.data?.signedRenewalInfo == signedRenewal, "\(label)")
            #expect(n.data?.status == sample.status, "\(label)")
            #expect((n.data?.consumptionRequestReason != nil) == (sample.combination.notificationType == .consumptionRequest), "\(label)")

            guard let transactionJSON = sample.transactionPayload else {
                #expect(sample.renewalPayload == nil, "\(label)")
                #expect(sample.originalTransactionId == nil, "\(label)")
                continue
            }
            let t = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: transactionJSON)
            #expect(t.originalTransactionId == sample.originalTransactionId, "\(label)")
            #expect(t.transactionId == sample.transactionId, "\(label)")
            #expect(t.productId == sample.productId, "\(label)")
            #expect(t.bundleId == "com.example.app", "\(label)")
            #expect(t.environment == environment, "\(label)")
            #expect(t.appAccountToken == sample.appAccountToken, "\(label)")
            #expect(t.expiresDate == sample.expiresDate, "\(label)")
            #expect(t.signedDate == sample.signedDate, "\(label)")
            #expect(t.type?.isDocumented == true, "\(label)")
            let revoked = [.refund, .revoke].contains(sample.combination.notificationType)
            #expect((t.revocationDate != nil) == revoked, "\(label)")

            if let renewalJSON = sample.renewalPayload {
                #expect(t.type == .autoRenewableSubscription, "\(label)")
                let r = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: renewalJSON)
                #expect(r.originalTransactionId == t.originalTransactionId, "\(label)")
                #expect(r.productId == t.productId, "\(label)")
                #expect(r.environment == environment, "\(label)")
                #expect(r.appAccountToken == t.appAccountToken, "\(label)")
                #expect(r.signedDate == sample.signedDate, "\(label)")
                let expires = try #require(t.expiresDate)
                switch sample.combination.notificationType {
                case .expired:
                    #expect(expires < sample.signedDate, "\(label)")
                    #expect(r.autoRenewStatus == .off && r.expirationIntent != nil, "\(label)")
                    #expect(sample.status == .expired, "\(label)")
                case .didFailToRenew:
                    #expect(r.isInBillingRetryPeriod == true, "\(label)")
                    if sample.combination.subtype == .gracePeriod {
                        #expect(try #require(r.gracePeriodExpiresDate) > sample.signedDate, "\(label)")
                    }
                case .gracePeriodExpired:
                    #expect(try #require(r.gracePeriodExpiresDate) < sample.signedDate, "\(label)")
                case .didRenew, .subscribed:
                    #expect(expires > sample.signedDate, "\(label)")
                    #expect(sample.status == .active, "\(label)")
                case .didChangeRenewalStatus:
                    #expect(r.autoRenewStatus == (sample.combination.subtype == .autoRenewDisabled ? .off : .on), "\(label)")
                case .didChangeRenewalPref where sample.combination.subtype == .downgrade:
                    #expect(r.autoRenewProductId != t.productId, "\(label)")
                default:
                    break
                }
            } else {
                #expect(t.type != .autoRenewableSubscription, "\(label)")
                #expect(sample.status == nil, "\(label)")
            }
        }
    }

    @Test func externalPurchaseTokensCarryTheirEnvironment() throws {
        for environment in [AppStoreEnvironment.sandbox, .production] {
            for sample in cycle(seed: 5, environment: environment) where sample.combination.notificationType == .externalPurchaseToken {
                let n = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: sample.notificationJSON(signedTransactionInfo: nil, signedRenewalInfo: nil))
                #expect(n.externalPurchaseToken?.environment == environment)
            }
        }
    }

    @Test func rescindConsentCarriesAppData() throws {
        let sample = try #require(cycle(seed: 3).first { $0.combination.notificationType == .rescindConsent })
        #expect(sample.appTransactionPayload != nil)
        let n = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self,
                                        from: sample.notificationJSON(signedTransactionInfo: nil, signedRenewalInfo: nil, signedAppTransactionInfo: "a.b.c"))
        #expect(n.appData?.signedAppTransactionInfo == "a.b.c")
        #expect(n.appData?.bundleId == "com.example.app")
        #expect(n.data == nil)
    }
}
#endif
