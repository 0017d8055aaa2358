/// Why a certificate revocation list was not accepted.
///
/// A CRL arrives over plain HTTP like an OCSP response: every case means "this list tells
/// nothing about the certificate", never that the certificate is bad.
package enum CRLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not one DER `CertificateList` (truncated, garbage, trailing bytes, a time that does not parse).
    case malformed(String)
    /// The list is issued under another name than the certificate's issuer.
    case wrongIssuer(String)
    /// The signature does not verify with the issuer's key.
    case badSignature(String)
    /// A list that does not cover every certificate of the issuer for every reason (a delta
    /// CRL, an indirect or partial one) or carries a critical extension this reader does not
    /// know (RFC 5280 §5.2: such a list must not be used).
    case unsupported(String)
    /// thisUpdate lies in the future (beyond the leeway), or nextUpdate before thisUpdate.
    case notYetValid(thisUpdate: Int64)
    /// nextUpdate has passed (beyond the leeway): a newer list is due.
    case stale(nextUpdate: Int64)

    package var description: String {
        switch self {
        case .malformed(let detail): "malformed CRL: \(detail)"
        case .wrongIssuer(let detail): "CRL issued by another name: \(detail)"
        case .badSignature(let detail): "CRL signature does not verify with the issuer's key: \(detail)"
        case .unsupported(let detail): "CRL not usable: \(detail)"
        case .notYetValid(let thisUpdate): "CRL thisUpdate \(thisUpdate) is in the future"
        case .stale(let nextUpdate): "CRL is stale (nextUpdate \(nextUpdate) has passed)"
        }
    }
}
