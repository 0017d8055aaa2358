/// A JWS whose signature verified with `x5c[0]`'s key (``SignaturePolicy``). The chain is
/// not judged yet, so the payload is authentic for that key only — not yet trusted.
struct AuthenticatedJWS {
    let header: ParsedJWSHeader
    let payloadJSON: [UInt8]
}
