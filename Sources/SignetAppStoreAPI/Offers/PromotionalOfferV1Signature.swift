public import Foundation

/// A legacy promotional offer signature (V1) and the values the app passes with it to
/// StoreKit: `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`
/// (the signature as bytes: base64-decode ``signature``) or `SKPaymentDiscount`.
///
/// Good for one purchase attempt (successful or not) and for 24 hours from ``timestamp``.
/// Encodes as `{"keyIdentifier","nonce","timestamp","signature"}` (Signet's names: Apple names
/// the values but not a JSON shape).
public struct PromotionalOfferV1Signature: Sendable, Hashable, Encodable {
    /// The key id the signature was made with (StoreKit's `keyID`).
    public var keyIdentifier: String
    /// The one-time nonce that was signed, lower case.
    public var nonce: UUID
    /// When it was signed, milliseconds since 1970.
    public var timestamp: Int64
    /// ECDSA P-256 with SHA-256 over the message, DER-encoded, in standard base64.
    public var signature: String

    /// A signature as made (tests build them to compare).
    public init(keyIdentifier: String, nonce: UUID, timestamp: Int64, signature: String) {
        self.keyIdentifier = keyIdentifier
        self.nonce = nonce
        self.timestamp = timestamp
        self.signature = signature
    }

    private enum CodingKeys: String, CodingKey { case keyIdentifier, nonce, timestamp, signature }

    /// Writes the nonce lower case, as Apple's message has it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(keyIdentifier, forKey: .keyIdentifier)
        try container.encode(nonce.uuidString.lowercased(), forKey: .nonce)
        try container.encode(timestamp, forKey: .timestamp)
        try container.encode(signature, forKey: .signature)
    }
}
