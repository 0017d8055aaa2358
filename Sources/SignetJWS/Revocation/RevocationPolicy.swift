public import SignetCore

/// The `verify` stage's `revocation:` setting: whether and how strictly an online OCSP
/// answer is required for the chain of every payload that passed the offline checks.
public struct RevocationPolicy: Sendable, Equatable {
    /// How a payload is judged when no revocation answer (OCSP, else CRL) can be had.
    public enum Mode: String, Sendable, CaseIterable, ConfigBindable {
        /// No online check at all: verification exactly as without the policy.
        case off
        /// A retryable failure is accepted while the certificate's last good answer's
        /// nextUpdate + ``RevocationPolicy/grace`` lies in the future, else as `hard`.
        case soft
        /// A retryable failure holds the record: neither passed nor dead-lettered nor committed.
        case hard
    }

    /// `off` (no online check), `soft` or `hard`.
    public var mode: Mode
    /// How long past the last good answer's nextUpdate `soft` still accepts a failed check.
    public var grace: Duration
    /// The longest one OCSP request may take, connection included.
    public var deadline: Duration
    /// How long a held batch keeps asking before the stage fails the run (as a sink that
    /// keeps failing does after `sink_retry_timeout`); 0s fails it at the first failure.
    public var retryTimeout: Duration

    /// A policy; the defaults are `revocation:`'s in a pipeline file (off, 1 day, 5 s, 5 minutes).
    public init(mode: Mode = .off, grace: Duration = .seconds(86_400), deadline: Duration = .seconds(5), retryTimeout: Duration = .seconds(300)) {
        self.mode = mode
        self.grace = grace
        self.deadline = deadline
        self.retryTimeout = retryTimeout
    }
}
