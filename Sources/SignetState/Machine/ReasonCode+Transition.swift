public import SignetCore

/// The codes the `transition` stage rejects with (docs/reason-codes.md).
extension ReasonCode {
    // MARK: State (`transition`)
    /// The verified payload lacks what the state machine needs (e.g. no originalTransactionId).
    public static let missingTransaction: ReasonCode = "missing_transaction"
    /// The record names a purchase stored under the other environment (Production vs Sandbox):
    /// a pipeline taking both keeps their purchases apart and never merges them.
    public static let environmentConflict: ReasonCode = "environment_conflict"
    /// A notificationType Signet does not know, with `reject_unknown_types: true`.
    public static let unknownNotificationType: ReasonCode = "unknown_notification_type"
}
