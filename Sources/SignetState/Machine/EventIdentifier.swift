import SignetOpenSSL

/// Deterministic event ids.
///
/// The only use of SignetOpenSSL in SignetState (SHA-256), kept in this one file.
enum EventIdentifier {
    /// A UUID-shaped id (version 5 layout) from SHA-256 over the stable inputs of an
    /// event: the purchase, the input that caused it, the event type and its position
    /// among the events of that input. A replay of the same input on the same prior
    /// state therefore yields the same id.
    static func make(originalTransactionId: String, source: String, type: String, ordinal: Int) -> String {
        var digest = SHA256.hash("signet-event-v1\u{1F}\(originalTransactionId)\u{1F}\(source)\u{1F}\(type)\u{1F}\(ordinal)")
        digest[6] = (digest[6] & 0x0F) | 0x50
        digest[8] = (digest[8] & 0x3F) | 0x80
        let hex = SHA256.hex(digest.prefix(16))
        let characters = Array(hex)
        return String(characters[0..<8]) + "-" + String(characters[8..<12]) + "-" + String(characters[12..<16]) + "-"
            + String(characters[16..<20]) + "-" + String(characters[20..<32])
    }
}
