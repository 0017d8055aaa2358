import SignetOpenSSL

/// Checks `Authorization: Bearer <token>` against the configured token in constant time.
struct BearerToken: Sendable {
    private let expected: [UInt8]

    init(_ token: String) {
        expected = Array(token.utf8)
    }

    /// Whether the header carries exactly the expected token.
    func accepts(authorizationHeader header: String?) -> Bool {
        guard let header else { return false }
        let prefix = "bearer "
        guard header.count > prefix.count, header.lowercased().hasPrefix(prefix) else { return false }
        let presented = Array(header.utf8.dropFirst(prefix.utf8.count))
        return HMACSHA256.constantTimeEquals(presented, expected)
    }
}
