import AppStoreModels

/// A signed payload kind (notification, transaction, renewal info) as ``ClaimsPolicy`` and
/// ``ValidationInstantPolicy`` see it: its `signedDate` and the claims Apple's library
/// compares for that kind. One description per kind instead of one claim check per kind.
protocol ClaimedPayload: Decodable, Sendable {
    /// Whether the kind carries a bundle id (renewal info has none: Apple checks only its environment).
    static var carriesBundleId: Bool { get }
    /// Whether the kind carries an app Apple id (notifications only).
    static var carriesAppAppleId: Bool { get }
    /// Whether a configured app Apple id is compared in every environment, not in Production
    /// only (a real-time retention request: Apple says never to answer another app's, and it
    /// names the app by nothing else).
    static var comparesAppAppleIdInEveryEnvironment: Bool { get }
    var signedDate: AppleTimestamp? { get }
    var claimedBundleId: String? { get }
    var claimedAppAppleId: Int64? { get }
    var claimedEnvironment: AppStoreEnvironment? { get }
    /// Names the record and where its claims come from, e.g. `DID_RENEW <uuid>: data.`;
    /// built only for a rejection's detail.
    func claimContext() -> String
}

extension ClaimedPayload {
    static var comparesAppAppleIdInEveryEnvironment: Bool { false }
}

extension ResponseBodyV2DecodedPayload: ClaimedPayload {
    static var carriesBundleId: Bool { true }
    static var carriesAppAppleId: Bool { true }
    var claimedBundleId: String? { effectiveBundleId }
    var claimedAppAppleId: Int64? { effectiveAppAppleId }
    var claimedEnvironment: AppStoreEnvironment? { effectiveEnvironment }

    /// Apple's claim source: `data`, else `summary`, else `externalPurchaseToken`, else `appData`.
    func claimContext() -> String {
        let source =
            if data != nil { "data." }
            else if summary != nil { "summary." }
            else if externalPurchaseToken != nil { "externalPurchaseToken." }
            else if appData != nil { "appData." }
            else { "(no data, summary, externalPurchaseToken or appData) " }
        return "\(notificationType?.rawValue ?? "notification")\(notificationUUID.map { " \($0)" } ?? ""): \(source)"
    }
}

extension JWSTransactionDecodedPayload: ClaimedPayload {
    static var carriesBundleId: Bool { true }
    static var carriesAppAppleId: Bool { false }
    var claimedBundleId: String? { bundleId }
    var claimedAppAppleId: Int64? { nil }
    var claimedEnvironment: AppStoreEnvironment? { environment }

    func claimContext() -> String {
        "transaction \(transactionId.map { "\"\($0)\"" } ?? "(no transactionId)"): "
    }
}

extension JWSAppTransactionDecodedPayload: ClaimedPayload {
    static var carriesBundleId: Bool { true }
    static var carriesAppAppleId: Bool { true }
    var claimedBundleId: String? { bundleId }
    var claimedAppAppleId: Int64? { appAppleId }
    var claimedEnvironment: AppStoreEnvironment? { receiptType }

    func claimContext() -> String {
        "app transaction \(appTransactionId.map { "\"\($0)\"" } ?? "(no appTransactionId)"): "
    }
}

extension JWSRenewalInfoDecodedPayload: ClaimedPayload {
    static var carriesBundleId: Bool { false }
    static var carriesAppAppleId: Bool { false }
    var claimedBundleId: String? { nil }
    var claimedAppAppleId: Int64? { nil }
    var claimedEnvironment: AppStoreEnvironment? { environment }

    func claimContext() -> String {
        "renewal info for \(originalTransactionId.map { "originalTransactionId \"\($0)\"" } ?? "(no originalTransactionId)"): "
    }
}

extension DecodedRealtimeRequestBody: ClaimedPayload {
    static var carriesBundleId: Bool { false }
    static var carriesAppAppleId: Bool { true }
    static var comparesAppAppleIdInEveryEnvironment: Bool { true }
    var claimedBundleId: String? { nil }
    var claimedAppAppleId: Int64? { appAppleId }
    var claimedEnvironment: AppStoreEnvironment? { environment }

    func claimContext() -> String {
        "realtime request \(requestIdentifier.map { "\"\($0)\"" } ?? "(no requestIdentifier)"): "
    }
}
