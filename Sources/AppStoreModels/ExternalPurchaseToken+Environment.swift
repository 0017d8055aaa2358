extension ExternalPurchaseToken {
    /// The environment of the token. The payload has no environment field; like Apple's
    /// server library, an identifier starting with `SANDBOX` means ``AppStoreEnvironment/sandbox``,
    /// anything else (including a missing identifier) ``AppStoreEnvironment/production``.
    public var environment: AppStoreEnvironment {
        if let externalPurchaseId, externalPurchaseId.hasPrefix("SANDBOX") {
            return .sandbox
        }
        return .production
    }
}
