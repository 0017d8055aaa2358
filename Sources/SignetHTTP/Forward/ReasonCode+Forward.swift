package import SignetCore

/// The codes a `forward` sink dead-letters a body with (docs/reason-codes.md).
extension ReasonCode {
    /// A `forward` receiver answered 4xx (other than 408/429): the body will never be accepted as sent.
    package static let forwardRefused: ReasonCode = "forward_refused"
    /// A `forward` receiver kept failing (5xx, 408, 429, timeouts, no connection) past `max_age`.
    package static let forwardExpired: ReasonCode = "forward_expired"
}
