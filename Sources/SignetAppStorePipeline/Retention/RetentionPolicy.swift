/// The `retention:` section: how Signet answers Apple's Get Retention Message requests
/// (docs/retention.md). The first rule that matches answers; no rule matching, a purchase
/// Signet does not know, or a store that does not answer within ``decisionTimeout``
/// answers ``defaultMessage``.
public struct RetentionPolicy: Sendable {
    /// Which promotional-offer signature an offer answer carries.
    public enum OfferSignatureVersion: String, Sendable, CaseIterable {
        /// `promotionalOfferSignatureV2` (a JWS): Apple's recommendation.
        case v2
        /// `promotionalOfferSignatureV1` (the legacy ECDSA signature and its fields).
        case v1
    }

    /// The path on the webhook's listener Apple POSTs requests to.
    public var path: String
    /// The message answered when no rule decides (an approved text message's id).
    public var defaultMessage: String
    /// The rules, in order: the first that matches answers.
    public var rules: [RetentionRule]
    /// Promotional offers are signed this way.
    public var offerSignature: OfferSignatureVersion
    /// How long the purchase lookup may take before the default is answered (Apple allows
    /// about 700 ms for the whole exchange).
    public var decisionTimeout: Duration
    /// Lookups running at most; beyond it a request is answered the default at once, so a
    /// stalled store never queues requests behind it.
    public var maxPendingLookups: Int
    /// How long answers are kept in the store: older ones are deleted (hourly, in bounded
    /// chunks). At least the widest `frequency_cap` window, which counts them.
    public var keepAnswers: Duration

    /// A policy answering `defaultMessage` unless one of `rules` matches.
    public init(
        path: String = "/retention", defaultMessage: String, rules: [RetentionRule] = [], offerSignature: OfferSignatureVersion = .v2,
        decisionTimeout: Duration = .milliseconds(150), maxPendingLookups: Int = 256, keepAnswers: Duration = .seconds(400 * 86_400)
    ) {
        self.path = path
        self.defaultMessage = defaultMessage
        self.rules = rules
        self.offerSignature = offerSignature
        self.decisionTimeout = decisionTimeout
        self.maxPendingLookups = maxPendingLookups
        self.keepAnswers = keepAnswers
    }

    /// The first rule that holds for `facts`; nil when none does.
    func firstMatch(_ facts: RetentionFacts) -> RetentionRule? {
        rules.first { $0.matches(facts) }
    }

    /// The widest frequency cap's window: how far back a purchase's answers are read; nil
    /// when no rule has a cap (then none are read).
    var capWindow: Duration? {
        rules.compactMap(\.frequencyCap?.within).max()
    }

    /// Whether any rule asks about refund questions (then they are read for each request).
    var readsRefundRequests: Bool {
        rules.contains { $0.refundRequested != nil }
    }

    /// Whether any rule answers a promotional offer (then the In-App Purchase key is needed).
    var signsOffers: Bool {
        rules.contains { if case .promotionalOffer = $0.answer { true } else { false } }
    }
}

/// Why a verified request got the default message.
enum RetentionDefaultReason: String, Sendable, CaseIterable {
    /// No rule matched.
    case noRule = "no_rule"
    /// Signet has no purchase with the request's originalTransactionId.
    case unknownPurchase = "unknown_purchase"
    /// The lookup did not finish within `decision_timeout`.
    case timeout
    /// The store failed the lookup.
    case storeError = "store_error"
    /// `max_pending_lookups` lookups were already running.
    case overloaded
    /// The matching rule's offer could not be signed (the key is missing or refused it).
    case signingFailed = "signing_failed"
}
