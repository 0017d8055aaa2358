import SignetOpenSSL

/// Deterministic event ids.
///
/// The only use of SignetOpenSSL in SignetState (SHA-256), kept in this one file.
enum EventIdentifier {
    private static let digits = Array("0123456789abcdef".utf8)

    /// A UUID-shaped id (version 5 layout) from SHA-256 over the stable inputs of an
    /// event: the purchase, the input that caused it, the event type and its position
    /// among the events of that input. A replay of the same input on the same prior
    /// state therefore yields the same id.
    static func make(originalTransactionId: String, source: String, type: String, ordinal: Int) -> String {
        // Unit separators keep ("a", "bc") and ("ab", "c") apart.
        var input: [UInt8] = []
        input.reserveCapacity(originalTransactionId.utf8.count + source.utf8.count + type.utf8.count + 32)
        input.append(contentsOf: "signet-event-v1".utf8)
        for part in [originalTransactionId, source, type, String(ordinal)] {
            input.append(0x1F)
            input.append(contentsOf: part.utf8)
        }
        var digest = SHA256.hash(input)
        digest[6] = (digest[6] & 0x0F) | 0x50
        digest[8] = (digest[8] & 0x3F) | 0x80
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for index in 0..<16 {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(digest[index] >> 4)])
            text.append(digits[Int(digest[index] & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
