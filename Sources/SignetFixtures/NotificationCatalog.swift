public import AppStoreModels
import SignetCore
import Foundation

/// Deterministically generates realistic unsigned notifications, cycling through every
/// documented type/subtype combination (`NotificationCombination/documented`) in order.
///
/// The same seed, bundle id, environment and app id always give the same sequence, byte for
/// byte. Each sample is a separate customer (its own `originalTransactionId` and app account
/// token); within a sample every payload agrees. `signedDate` increases from one sample to
/// the next. Payload fields follow what Apple sends for each event: for example an
/// `EXPIRED/VOLUNTARY` renewal info has `autoRenewStatus` 0 and `expirationIntent` 1 and an
/// `expiresDate` in the past, a `REFUND` transaction has `revocationDate`, a
/// `DID_FAIL_TO_RENEW/GRACE_PERIOD` renewal info has a future `gracePeriodExpiresDate`.
/// Refund-type notifications alternate between subscriptions and one-time products from one
/// cycle to the next, so both shapes appear.
public struct SampleNotificationGenerator: Sendable {
    /// The combinations a generator cycles through unless told otherwise, in order.
    public static let combinations = NotificationCombination.documented

    /// What this generator cycles through (``combinations``, or the ones asked for).
    private let cycle: [NotificationCombination]

    private var random: SplitMix64
    private let bundleId: String
    private let environment: AppStoreEnvironment
    private let appAppleId: Int64?
    /// Position in ``combinations``; `index / combinations.count` is the cycle number.
    private var index = 0
    /// The notification clock; advances by one to six hours per sample.
    private var now: Int64
    private var nextId: Int64

    /// Creates a generator.
    /// - Parameters:
    ///   - seed: any value; equal seeds give equal output.
    ///   - bundleId: the app's bundle identifier, also the prefix of every product id.
    ///   - environment: written into every payload.
    ///   - appAppleId: written where Apple writes it; nil leaves it out, as sandbox often does.
    ///   - start: where the notification clock starts (UNIX ms); nil: early 2025, reproducible.
    ///   - only: the combinations to cycle through (documented ones; empty: all of them).
    public init(
        seed: UInt64, bundleId: String, environment: AppStoreEnvironment, appAppleId: Int64?, start: Int64? = nil,
        only: [NotificationCombination] = []
    ) {
        cycle = only.isEmpty ? Self.combinations : only
        var random = SplitMix64(seed: seed)
        self.bundleId = bundleId
        self.environment = environment
        self.appAppleId = appAppleId
        // 2025-01-01T00:00:00Z plus up to 30 days, so different seeds do not share a clock.
        let offset = Int64(random.next(below: 30 * 86_400)) * 1000
        self.now = start ?? (1_735_689_600_000 + offset)
        // Transaction ids look like Apple's: 16 digits in sandbox (2000000…), 15 in production.
        let idBase: Int64 = environment == .production ? 330_000_000_000_000 : 2_000_000_800_000_000
        self.nextId = idBase + Int64(random.next(below: 100_000_000)) * 1000
        self.random = random
    }

    /// The next sample; after the last combination it starts over with the first.
    public mutating func next() -> SampleNotification {
        let combination = self.cycle[index % self.cycle.count]
        let cycle = index / self.cycle.count
        index += 1
        // Seconds apart: a million samples span about two months, so even large fixture
        // sets stay in the past (verify refuses signedDates in the future).
        now += Int64(1_000 + random.next(below: 9_000))
        return make(combination, cycle: cycle)
    }

    /// One full cycle: a sample of every combination it cycles through.
    public mutating func nextCycle() -> [SampleNotification] {
        (0..<cycle.count).map { _ in next() }
    }

    // MARK: Building one sample

    private static let day: Int64 = 86_400_000
    private static let storefronts: [(code: String, id: String, currency: String, monthly: Int64)] = [
        ("USA", "143441", "USD", 9990), ("GBR", "143444", "GBP", 8990), ("DEU", "143443", "EUR", 9990),
        ("JPN", "143462", "JPY", 1_500_000), ("AUS", "143460", "AUD", 14990), ("CAN", "143455", "CAD", 12990),
    ]

    private enum Shape {
        case subscription
        case consumable
        case nonConsumable
        case none
    }

    private func shape(of combination: NotificationCombination, cycle: Int) -> Shape {
        switch combination.notificationType {
        case .test, .externalPurchaseToken, .rescindConsent:
            return .none
        case .renewalExtension where combination.subtype == .summary:
            return .none
        case .oneTimeCharge:
            return cycle.isMultiple(of: 2) ? .consumable : .nonConsumable
        case .refund, .refundDeclined, .refundReversed, .consumptionRequest:
            return cycle.isMultiple(of: 2) ? .subscription : .consumable
        case .revoke:
            // Family Sharing covers subscriptions and non-consumables, never consumables.
            return cycle.isMultiple(of: 2) ? .subscription : .nonConsumable
        default:
            return .subscription
        }
    }

    private mutating func make(_ combination: NotificationCombination, cycle: Int) -> SampleNotification {
        let signedDate = AppleTimestamp(millisecondsSince1970: now)
        let uuid = random.uuid()
        let bundleVersion = "\(1 + random.next(below: 3)).\(random.next(below: 10)).\(random.next(below: 20))"
        let storefront = Self.storefronts[Int(random.next(below: UInt64(Self.storefronts.count)))]

        switch shape(of: combination, cycle: cycle) {
        case .none:
            return makeWithoutTransaction(combination, uuid: uuid, signedDate: signedDate, bundleVersion: bundleVersion, storefront: storefront.code)
        case .consumable, .nonConsumable:
            let consumable = shape(of: combination, cycle: cycle) == .consumable
            return makeOneTime(combination, consumable: consumable, uuid: uuid, signedDate: signedDate,
                               bundleVersion: bundleVersion, storefront: storefront)
        case .subscription:
            return makeSubscription(combination, uuid: uuid, signedDate: signedDate, bundleVersion: bundleVersion, storefront: storefront)
        }
    }

    private mutating func makeWithoutTransaction(_ combination: NotificationCombination, uuid: String, signedDate: AppleTimestamp,
                                                 bundleVersion: String, storefront: String) -> SampleNotification {
        let body: SampleNotification.Body
        var appTransactionPayload: [UInt8]?
        switch combination.notificationType {
        case .externalPurchaseToken:
            // Apple's library derives the environment of a token from this prefix.
            let id = (environment == .sandbox ? "SANDBOX_" : "") + random.uuid()
            let created = now - Int64(random.next(below: 20)) * Self.day - Int64(random.next(below: UInt64(Self.day)))
            let tokenType: ExternalPurchaseTokenType? = combination.subtype == .unreported ? nil : (random.next(below: 2) == 0 ? .services : .acquisition)
            let expiration: Int64? = combination.subtype == .activeTokenReminder ? created + 365 * Self.day : nil
            body = .externalPurchaseToken(externalPurchaseId: id, tokenCreationDate: created, tokenType: tokenType, tokenExpirationDate: expiration)
        case .renewalExtension:
            let all = ["USA", "CAN", "MEX", "GBR", "DEU", "FRA", "JPN", "AUS"]
            let count = 1 + Int(random.next(below: UInt64(all.count)))
            let failed = Int64(random.next(below: 5))
            body = .summary(requestIdentifier: random.uuid(), productId: "\(bundleId).premium.monthly",
                            storefrontCountryCodes: Array(all.prefix(count)),
                            succeededCount: Int64(10 + random.next(below: 5000)), failedCount: failed)
        case .rescindConsent:
            body = .appData
            var w = JSONText()
            w.beginObject()
            w.field("receiptType", environment.rawValue)
            w.field("appAppleId", appAppleId)
            w.field("bundleId", bundleId)
            w.field("applicationVersion", bundleVersion)
            w.field("receiptCreationDate", now - 1000)
            w.field("originalPurchaseDate", now - Int64(1 + random.next(below: 400)) * Self.day)
            w.field("originalApplicationVersion", "1.0.0")
            w.field("appTransactionId", String(takeId()))
            w.field("originalPlatform", "iOS")
            w.field("signedDate", signedDate)
            w.endObject()
            appTransactionPayload = w.bytes
        default:
            // TEST: a data object naming only the app.
            body = .data(bundleVersion: bundleVersion, consumptionRequestReason: nil)
        }
        return SampleNotification(
            combination: combination, notificationUUID: uuid, signedDate: signedDate, environment: environment,
            bundleId: bundleId, appAppleId: appAppleId, originalTransactionId: nil, transactionId: nil, productId: nil,
            appAccountToken: nil, expiresDate: nil, status: nil, transactionPayload: nil, renewalPayload: nil,
            appTransactionPayload: appTransactionPayload, body: body)
    }

    private mutating func makeOneTime(_ combination: NotificationCombination, consumable: Bool, uuid: String, signedDate: AppleTimestamp,
                                      bundleVersion: String, storefront: (code: String, id: String, currency: String, monthly: Int64)) -> SampleNotification {
        let id = String(takeId())
        let token = random.uuid()
        let productId = consumable ? "\(bundleId).coins.\([100, 500, 1200][Int(random.next(below: 3))])" : "\(bundleId).lifetime"
        let type: TransactionType = consumable ? .consumable : .nonConsumable
        let quantity = consumable ? 1 + Int(random.next(below: 3)) : 1
        // The purchase happened at the notification (ONE_TIME_CHARGE) or days before (refund flows).
        let purchaseDate = combination.notificationType == .oneTimeCharge ? now - 2000 : now - Int64(1 + random.next(below: 20)) * Self.day
        let revoked = combination.notificationType == .refund || combination.notificationType == .revoke
        let familyShared = combination.notificationType == .revoke

        var w = JSONText()
        w.beginObject()
        w.field("transactionId", id)
        w.field("originalTransactionId", id)
        w.field("bundleId", bundleId)
        w.field("productId", productId)
        w.field("purchaseDate", purchaseDate)
        w.field("originalPurchaseDate", purchaseDate)
        w.field("quantity", quantity)
        w.field("type", type.rawValue)
        w.field("appAccountToken", token)
        w.field("inAppOwnershipType", (familyShared ? InAppOwnershipType.familyShared : .purchased).rawValue)
        w.field("signedDate", signedDate)
        if revoked {
            w.field("revocationReason", (familyShared ? RevocationReason.refundedForOtherReason : RevocationReason(rawValue: Int(random.next(below: 2)))).rawValue)
            w.field("revocationDate", now - 60_000)
            w.field("revocationType", (familyShared ? RevocationType.familyRevoke : .refundFull).rawValue)
        }
        w.field("environment", environment.rawValue)
        w.field("transactionReason", TransactionReason.purchase.rawValue)
        w.field("storefront", storefront.code)
        w.field("storefrontId", storefront.id)
        if !familyShared {
            w.field("price", storefront.monthly / 5 * Int64(quantity))
            w.field("currency", storefront.currency)
        }
        w.field("appTransactionId", String(takeId()))
        w.endObject()

        let reason: ConsumptionRequestReason? = combination.notificationType == .consumptionRequest
            ? ConsumptionRequestReason.documentedValues[Int(random.next(below: UInt64(ConsumptionRequestReason.documentedValues.count)))] : nil
        return SampleNotification(
            combination: combination, notificationUUID: uuid, signedDate: signedDate, environment: environment,
            bundleId: bundleId, appAppleId: appAppleId, originalTransactionId: id, transactionId: id, productId: productId,
            appAccountToken: token, expiresDate: nil, status: nil, transactionPayload: w.bytes, renewalPayload: nil,
            appTransactionPayload: nil, body: .data(bundleVersion: bundleVersion, consumptionRequestReason: reason))
    }

    // Subscription state at the notification, derived from the event.
    private struct SubscriptionFacts {
        var productId: String
        var autoRenewProductId: String
        var period: Int64
        var purchaseDate: Int64
        var expiresDate: Int64
        var originalPurchaseDate: Int64
        var transactionReason: TransactionReason
        var status: SubscriptionStatus
        var autoRenewStatus: AutoRenewStatus = .on
        var expirationIntent: ExpirationIntent?
        var isInBillingRetryPeriod = false
        var gracePeriodExpiresDate: Int64?
        var priceIncreaseStatus: PriceIncreaseStatus?
        var renewalPriceFactor: Int64 = 1
        var revocation: (reason: RevocationReason, type: RevocationType, date: Int64)?
        var familyShared = false
        var offer: (type: OfferType, id: String, discount: OfferDiscountType, period: String)?
        var newSubscription = false
        var previousOriginalTransactionId: String?
    }

    private mutating func makeSubscription(_ combination: NotificationCombination, uuid: String, signedDate: AppleTimestamp,
                                           bundleVersion: String, storefront: (code: String, id: String, currency: String, monthly: Int64)) -> SampleNotification {
        let monthly = "\(bundleId).premium.monthly", yearly = "\(bundleId).premium.yearly", basic = "\(bundleId).basic.monthly"
        let month = 30 * Self.day
        let periodsBefore = Int64(1 + random.next(below: 6))
        let jitter = Int64(random.next(below: 3_600_000))
        // Default: an active monthly subscription renewed at the start of its current period.
        var f = SubscriptionFacts(
            productId: monthly, autoRenewProductId: monthly, period: month,
            purchaseDate: now - 2 * Self.day - jitter, expiresDate: now - 2 * Self.day - jitter + month,
            originalPurchaseDate: now - 2 * Self.day - jitter - periodsBefore * month,
            transactionReason: .renewal, status: .active)

        switch (combination.notificationType, combination.subtype) {
        case (.subscribed, .initialBuy?):
            f.purchaseDate = now - 1500
            f.expiresDate = f.purchaseDate + month
            f.originalPurchaseDate = f.purchaseDate
            f.transactionReason = .purchase
            f.newSubscription = true
            if random.next(below: 2) == 0 { f.offer = (.introductoryOffer, "intro_trial", .freeTrial, "P1W") }
        case (.subscribed, _):  // RESUBSCRIBE after a lapse
            f.purchaseDate = now - 1500
            f.expiresDate = f.purchaseDate + month
            f.transactionReason = .purchase
        case (.didRenew, .billingRecovery?):
            // Renewed late, after billing retry: the new period starts now.
            f.purchaseDate = now - 1000
            f.expiresDate = f.purchaseDate + month
        case (.didRenew, _):
            f.purchaseDate = now - 1000
            f.expiresDate = f.purchaseDate + month
        case (.didChangeRenewalPref, .upgrade?), (.offerRedeemed, .upgrade?):
            // Upgrades take effect at once with a new purchase of the higher product.
            f.productId = yearly
            f.autoRenewProductId = yearly
            f.period = 365 * Self.day
            f.purchaseDate = now - 1500
            f.expiresDate = f.purchaseDate + f.period
            f.transactionReason = .purchase
        case (.didChangeRenewalPref, .downgrade?), (.offerRedeemed, .downgrade?):
            // Downgrades wait for the next renewal: only the renewal product changes.
            f.autoRenewProductId = basic
        case (.didChangeRenewalPref, nil):
            // A pending downgrade was cancelled: renewal product is the current one again.
            break
        case (.didChangeRenewalStatus, .autoRenewDisabled?):
            f.autoRenewStatus = .off
        case (.didChangeRenewalStatus, _):
            f.autoRenewStatus = .on
        case (.expired, let subtype):
            f.status = .expired
            f.autoRenewStatus = .off
            f.purchaseDate = now - month - 3_600_000 - jitter
            f.expiresDate = f.purchaseDate + month
            switch subtype {
            case .billingRetry?:
                // Expired after the 60-day billing retry period.
                f.purchaseDate = now - month - 60 * Self.day
                f.expiresDate = f.purchaseDate + month
                f.expirationIntent = .billingError
            case .priceIncrease?:
                f.expirationIntent = .customerDidNotConsentToPriceIncrease
                f.priceIncreaseStatus = .customerHasNotResponded
                f.renewalPriceFactor = 2
            case .productNotForSale?:
                f.expirationIntent = .productNotAvailable
            default:
                f.expirationIntent = .customerCancelled
            }
        case (.didFailToRenew, let subtype):
            f.purchaseDate = now - month - 60_000
            f.expiresDate = now - 60_000
            f.isInBillingRetryPeriod = true
            f.expirationIntent = .billingError
            if subtype == .gracePeriod {
                f.status = .billingGracePeriod
                f.gracePeriodExpiresDate = f.expiresDate + 16 * Self.day
            } else {
                f.status = .billingRetry
            }
        case (.gracePeriodExpired, _):
            f.purchaseDate = now - month - 16 * Self.day
            f.expiresDate = now - 16 * Self.day
            f.isInBillingRetryPeriod = true
            f.expirationIntent = .billingError
            f.gracePeriodExpiresDate = now - 30_000
            f.status = .billingRetry
        case (.priceIncrease, .pending?):
            f.priceIncreaseStatus = .customerHasNotResponded
            f.renewalPriceFactor = 2
        case (.priceIncrease, _):
            f.priceIncreaseStatus = .customerConsentedOrWasNotifiedWithoutNeedingConsent
            f.renewalPriceFactor = 2
        case (.refund, _):
            f.status = .revoked
            f.autoRenewStatus = .off
            f.revocation = (RevocationReason(rawValue: Int(random.next(below: 2))), .refundFull, now - 60_000)
        case (.revoke, _):
            f.status = .revoked
            f.familyShared = true
            f.revocation = (.refundedForOtherReason, .familyRevoke, now - 60_000)
        case (.renewalExtended, _), (.renewalExtension, .failure?):
            // RENEWAL_EXTENDED carries the extended date; FAILURE the unchanged one.
            if combination.notificationType == .renewalExtended { f.expiresDate += 7 * Self.day }
        case (.offerRedeemed, nil):
            f.offer = (.promotionalOffer, "loyalty_discount", .payAsYouGo, "P3M")
            f.transactionReason = .purchase
        case (.migration, _):
            f.previousOriginalTransactionId = String(takeId())
        case (.priceChange, _):
            f.renewalPriceFactor = 2
        default:
            // REFUND_DECLINED, REFUND_REVERSED, CONSUMPTION_REQUEST, METADATA_UPDATE: an active subscription.
            break
        }
        if case .offerRedeemed = combination.notificationType, f.offer == nil {
            f.offer = (.offerCode, "SPRING2025", .payUpFront, "P1M")
        }

        let originalId = takeId()
        let transactionId = f.newSubscription ? originalId : takeId()
        let token = random.uuid()
        let appTransactionId = String(takeId())
        let price = f.period == month ? storefront.monthly : storefront.monthly * 10

        var t = JSONText()
        t.beginObject()
        t.field("transactionId", String(transactionId))
        t.field("originalTransactionId", String(originalId))
        t.field("webOrderLineItemId", String(takeId()))
        t.field("bundleId", bundleId)
        t.field("productId", f.productId)
        t.field("subscriptionGroupIdentifier", String(21_000_000 + Int(random.next(below: 999_999))))
        t.field("purchaseDate", f.purchaseDate)
        t.field("originalPurchaseDate", f.originalPurchaseDate)
        t.field("expiresDate", f.expiresDate)
        t.field("quantity", 1)
        t.field("type", TransactionType.autoRenewableSubscription.rawValue)
        t.field("appAccountToken", token)
        t.field("inAppOwnershipType", (f.familyShared ? InAppOwnershipType.familyShared : .purchased).rawValue)
        t.field("signedDate", signedDate)
        if let revocation = f.revocation {
            t.field("revocationReason", revocation.reason.rawValue)
            t.field("revocationDate", revocation.date)
            t.field("revocationType", revocation.type.rawValue)
        }
        if let offer = f.offer {
            t.field("offerType", offer.type.rawValue)
            t.field("offerIdentifier", offer.id)
            t.field("offerDiscountType", offer.discount.rawValue)
            t.field("offerPeriod", offer.period)
        }
        t.field("environment", environment.rawValue)
        t.field("transactionReason", f.transactionReason.rawValue)
        t.field("storefront", storefront.code)
        t.field("storefrontId", storefront.id)
        t.field("price", f.offer?.discount == .freeTrial ? 0 : price)
        t.field("currency", storefront.currency)
        t.field("appTransactionId", appTransactionId)
        t.field("previousOriginalTransactionId", f.previousOriginalTransactionId)
        t.endObject()

        var r = JSONText()
        r.beginObject()
        r.field("expirationIntent", f.expirationIntent?.rawValue)
        r.field("originalTransactionId", String(originalId))
        r.field("autoRenewProductId", f.autoRenewProductId)
        r.field("productId", f.productId)
        r.field("autoRenewStatus", f.autoRenewStatus.rawValue)
        r.field("isInBillingRetryPeriod", f.isInBillingRetryPeriod)
        r.field("priceIncreaseStatus", f.priceIncreaseStatus?.rawValue)
        r.field("gracePeriodExpiresDate", f.gracePeriodExpiresDate)
        r.field("signedDate", signedDate)
        r.field("environment", environment.rawValue)
        r.field("recentSubscriptionStartDate", f.originalPurchaseDate)
        r.field("renewalDate", f.expiresDate)
        if f.autoRenewStatus == .on {
            let renewsToBasic = f.autoRenewProductId == basic
            r.field("renewalPrice", renewsToBasic ? price / 2 : price * f.renewalPriceFactor)
            r.field("currency", storefront.currency)
        }
        r.field("appTransactionId", appTransactionId)
        r.field("appAccountToken", token)
        r.endObject()

        let reason: ConsumptionRequestReason? = combination.notificationType == .consumptionRequest
            ? ConsumptionRequestReason.documentedValues[Int(random.next(below: UInt64(ConsumptionRequestReason.documentedValues.count)))] : nil
        return SampleNotification(
            combination: combination, notificationUUID: uuid, signedDate: signedDate, environment: environment,
            bundleId: bundleId, appAppleId: appAppleId, originalTransactionId: String(originalId),
            transactionId: String(transactionId), productId: f.productId, appAccountToken: token,
            expiresDate: AppleTimestamp(millisecondsSince1970: f.expiresDate), status: f.status,
            transactionPayload: t.bytes, renewalPayload: r.bytes, appTransactionPayload: nil,
            body: .data(bundleVersion: bundleVersion, consumptionRequestReason: reason))
    }

    private mutating func takeId() -> Int64 {
        nextId += Int64(1 + random.next(below: 997))
        return nextId
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and identical on every platform, unlike
/// `SystemRandomNumberGenerator`, so a seed always reproduces the same fixtures.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (the modulo bias is irrelevant for fixtures).
    mutating func next(below bound: UInt64) -> UInt64 {
        next() % bound
    }

    /// A lowercase version-4 UUID string.
    mutating func uuid() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        let high = next(), low = next()
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: high >> (8 * i))
            bytes[8 + i] = UInt8(truncatingIfNeeded: low >> (8 * i))
        }
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
        let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return uuid.uuidString.lowercased()
    }
}
