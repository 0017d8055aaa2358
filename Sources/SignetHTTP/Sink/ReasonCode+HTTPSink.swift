public import SignetCore

/// The code the `http` sink refuses an event with (docs/reason-codes.md).
extension ReasonCode {
    // MARK: Delivery (sinks)
    /// An `http` sink's receiver answered 4xx (other than 408/429): the event will never be accepted as sent.
    public static let httpRejected: ReasonCode = "http_rejected"
}
