import SignetCore

/// A compact JWS that passed ``CompactJWSPolicy``: header rules applied, payload and
/// signature base64url-decoded, nothing authenticated yet.
struct CompactJWS {
    let header: ParsedJWSHeader
    /// The decoded payload. Untrusted until ``SignaturePolicy`` returns.
    let payloadJSON: [UInt8]
    let signature: [UInt8]
    /// `header.payload` as it arrived. Points into the caller's buffer, so it is valid only
    /// during the verification call that made it (never stored beyond it).
    let signingInput: UnsafeRawBufferPointer
}
