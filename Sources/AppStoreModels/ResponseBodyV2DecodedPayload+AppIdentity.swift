extension ResponseBodyV2DecodedPayload {
    // A notification names its app in exactly one of `data`, `summary`, `externalPurchaseToken`
    // or `appData`. These pick the first present in that order, which is how Apple's library
    // chooses what to check against the verifier's configured bundle id, app id and environment.

    /// The bundle identifier from whichever payload object the notification carries.
    public var effectiveBundleId: String? {
        if let data { return data.bundleId }
        if let summary { return summary.bundleId }
        if let externalPurchaseToken { return externalPurchaseToken.bundleId }
        if let appData { return appData.bundleId }
        return nil
    }

    /// The App Store app identifier from whichever payload object the notification carries.
    public var effectiveAppAppleId: Int64? {
        if let data { return data.appAppleId }
        if let summary { return summary.appAppleId }
        if let externalPurchaseToken { return externalPurchaseToken.appAppleId }
        if let appData { return appData.appAppleId }
        return nil
    }

    /// The environment from whichever payload object the notification carries (for an
    /// external purchase token, derived from its identifier).
    public var effectiveEnvironment: AppStoreEnvironment? {
        if let data { return data.environment }
        if let summary { return summary.environment }
        if let externalPurchaseToken { return externalPurchaseToken.environment }
        if let appData { return appData.environment }
        return nil
    }
}
