import COpenSSL

/// The elliptic curves Signet handles: P-256 (ES256 leaf keys) and P-384 (Apple's
/// root and intermediate keys, mirrored by the test PKI).
public enum ECCurve: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case p256 = "P-256"
    case p384 = "P-384"

    /// OpenSSL's NID for the curve.
    var nid: Int32 {
        switch self {
        case .p256: NID_X9_62_prime256v1
        case .p384: NID_secp384r1
        }
    }

    /// Size in bytes of a field element, and therefore of each of r and s in a raw signature.
    public var coordinateByteCount: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        }
    }

    init?(nid: Int32) {
        switch nid {
        case NID_X9_62_prime256v1: self = .p256
        case NID_secp384r1: self = .p384
        default: return nil
        }
    }

    public var description: String { rawValue }
}

/// The digest a certificate signature uses (ecdsa-with-SHA256 / ecdsa-with-SHA384).
public enum SignatureHash: String, Sendable, Hashable {
    case sha256
    case sha384

    /// The legacy static EVP_MD (no provider fetch; fine for rare certificate signing).
    var evpMD: OpaquePointer? {
        switch self {
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        }
    }
}
