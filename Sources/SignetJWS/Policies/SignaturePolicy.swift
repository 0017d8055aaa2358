import SignetCore
import SignetOpenSSL

/// Step 2 (``VerificationStep/signature``): the signature is 64 raw bytes `r‖s` and
/// verifies with `x5c[0]`'s P-256 key over `header.payload` (`invalid_signature`).
/// Runs before the payload is parsed, so unauthenticated JSON never reaches the decoder.
struct SignaturePolicy: JWSVerificationPolicy {
    static let step = VerificationStep.signature

    func check(_ jws: CompactJWS, role: JWSRole) throws(RecordRejection) -> AuthenticatedJWS {
        let signature = jws.signature
        guard signature.count == 64 else {
            let hint = signature.first == 0x30 && (68...72).contains(signature.count)
                ? " (it looks DER-encoded; JWS ES256 requires raw r‖s, RFC 7518 §3.4)" : ""
            throw RecordRejection(.invalidSignature, "\(role.field): the ES256 signature is \(signature.count) bytes, not 64\(hint)")
        }
        let header = jws.header
        guard let key = header.leafKey else {
            throw RecordRejection(.invalidCertificateChain, "\(role.field): \(header.leafKeyProblem ?? "the leaf certificate has no usable key")")
        }
        let digest = Self.digest(of: jws)
        let valid = signature.withUnsafeBytes { signatureBytes in
            digest.withUnsafeBytes { key.verifyES256(rawSignature: signatureBytes, digest: $0) }
        }
        guard valid else {
            throw RecordRejection(
                .invalidSignature,
                "\(role.field): the ES256 signature does not verify with the key of x5c[0] (\(header.leaf.subject), serial \(header.leaf.serialNumberHex)) — the data was altered or signed by another key")
        }
        return AuthenticatedJWS(header: header, payloadJSON: jws.payloadJSON)
    }

    /// SHA-256 of `header.payload`, continuing from the cached header's state when there is
    /// one (``ParsedJWSHeader/signingInputPrefix``): the same digest, half the bytes hashed.
    static func digest(of jws: CompactJWS) -> [UInt8] {
        let input = jws.signingInput
        if let prefix = jws.header.signingInputPrefix, prefix.prefixCount <= input.count,
           input[prefix.prefixCount - 1] == UInt8(ascii: ".")
        {
            return prefix.finish(UnsafeRawBufferPointer(rebasing: input[prefix.prefixCount...]))
        }
        return SHA256.hash(input)
    }
}
