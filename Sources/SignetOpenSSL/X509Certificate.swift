import COpenSSL
public import Foundation

/// An immutable X.509 certificate backed by an OpenSSL `X509` that this object owns.
///
/// `@unchecked Sendable`: the `X509*` is never mutated after `init`. OpenSSL lazily
/// caches decoded extensions inside an `X509` on first use; `init` forces that cache
/// to be filled (`X509_check_purpose(x, -1, 0)`), so every later call is a pure read
/// (and OpenSSL 3 guards the cache with the object's own lock besides). Concurrent
/// reads of an `X509` are supported by OpenSSL; the object is freed only in `deinit`,
/// when no other reference can exist.
public final class X509Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The owned `X509*`.
    let pointer: OpaquePointer
    /// The exact DER bytes this certificate was parsed from (or re-encoded to).
    public let derEncoded: [UInt8]

    /// Parses exactly one DER certificate; trailing bytes after it are an error.
    public init(derEncoded: [UInt8]) throws(OpenSSLError) {
        guard !derEncoded.isEmpty else { throw OpenSSLError(operation: "parse DER certificate: empty input") }
        let (parsed, consumed) = OpenSSLSupport.decodeDER(derEncoded) { d2i_X509(nil, $0, $1) }
        guard let parsed else { throw OpenSSLError.drain("parse DER certificate") }
        guard consumed == derEncoded.count else {
            X509_free(parsed)
            throw OpenSSLError(operation: "parse DER certificate: \(derEncoded.count - consumed) trailing bytes after the certificate")
        }
        self.pointer = parsed
        self.derEncoded = derEncoded
        Self.primeExtensionCache(parsed)
    }

    /// Parses the first certificate of a PEM string.
    public convenience init(pemEncoded: String) throws(OpenSSLError) {
        let all = try Self.parsePEM(Array(pemEncoded.utf8))
        guard let first = all.first else { throw OpenSSLError(operation: "parse PEM certificate: no CERTIFICATE block") }
        try self.init(derEncoded: first.derEncoded)
    }

    /// Adopts an `X509*` whose reference the caller transfers to this object.
    init(takingOwnership x509: OpaquePointer) throws(OpenSSLError) {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(x509, &out)
        guard length > 0, let out else {
            X509_free(x509)
            throw OpenSSLError.drain("encode certificate as DER")
        }
        self.derEncoded = Array(UnsafeBufferPointer(start: out, count: Int(length)))
        CRYPTO_free(out, #fileID, #line)
        self.pointer = x509
        Self.primeExtensionCache(x509)
    }

    deinit { X509_free(pointer) }

    private static func primeExtensionCache(_ x509: OpaquePointer) {
        // Fills OpenSSL's cached extension flags now, so later reads never write.
        _ = X509_check_purpose(x509, -1, 0)
        OpenSSLError.drainErrorQueue()
    }

    // MARK: Loading

    /// Loads every certificate from a file: a PEM bundle (one or more
    /// `-----BEGIN CERTIFICATE-----` blocks) or a single DER certificate.
    public static func loadAll(fromFile path: String) throws(OpenSSLError) -> [X509Certificate] {
        let bytes: [UInt8]
        do {
            bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw OpenSSLError(operation: "read certificate file \(path): \(error.localizedDescription)")
        }
        return try loadAll(pemOrDER: bytes, source: path)
    }

    /// Parses a PEM bundle or a single DER certificate from memory.
    public static func loadAll(pemOrDER bytes: [UInt8], source: String = "input") throws(OpenSSLError) -> [X509Certificate] {
        let marker = Array("-----BEGIN".utf8)
        let looksLikePEM = bytes.count >= marker.count
            && (0...(bytes.count - marker.count)).contains { offset in bytes[offset..<(offset + marker.count)].elementsEqual(marker) }
        if looksLikePEM {
            let certificates = try parsePEM(bytes)
            guard !certificates.isEmpty else {
                throw OpenSSLError(operation: "\(source): PEM input holds no CERTIFICATE block")
            }
            return certificates
        }
        do {
            return [try X509Certificate(derEncoded: bytes)]
        } catch {
            throw OpenSSLError(operation: "\(source): neither PEM nor a DER certificate (\(error))")
        }
    }

    private static func parsePEM(_ bytes: [UInt8]) throws(OpenSSLError) -> [X509Certificate] {
        var result: [X509Certificate] = []
        var failure: OpenSSLError?
        try OpenSSLSupport.withReadBIO(bytes) { bio in
            while true {
                guard let x509 = PEM_read_bio_X509(bio, nil, nil, nil) else {
                    // The end of input shows up as PEM_R_NO_START_LINE after the last block.
                    if ERR_GET_REASON(ERR_peek_last_error()) == PEM_R_NO_START_LINE {
                        OpenSSLError.drainErrorQueue()
                    } else {
                        failure = OpenSSLError.drain("parse PEM certificate #\(result.count + 1)")
                    }
                    return
                }
                switch Result(catching: { () throws(OpenSSLError) in try X509Certificate(takingOwnership: x509) }) {
                case .success(let certificate): result.append(certificate)
                case .failure(let error):
                    failure = error
                    return
                }
            }
        }
        if let failure { throw failure }
        return result
    }

    // MARK: Encoding

    /// PEM (`-----BEGIN CERTIFICATE-----`) encoding with 64-column lines.
    public var pemEncoded: String {
        var lines = ["-----BEGIN CERTIFICATE-----"]
        let base64 = Array(Base64.encode(derEncoded).utf8)
        var index = 0
        while index < base64.count {
            let end = min(index + 64, base64.count)
            lines.append(String(decoding: base64[index..<end], as: UTF8.self))
            index = end
        }
        lines.append("-----END CERTIFICATE-----")
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Fields

    /// Subject distinguished name in RFC 2253 form ("CN=…,O=…,C=US").
    public var subject: String { Self.nameString(X509_get_subject_name(pointer)) }
    /// Issuer distinguished name in RFC 2253 form.
    public var issuer: String { Self.nameString(X509_get_issuer_name(pointer)) }

    /// Start of the validity window, seconds since 1970 (nil only for a malformed time).
    public var notBeforeEpochSeconds: Int64? { OpenSSLSupport.epochSeconds(X509_get0_notBefore(pointer)) }
    /// End of the validity window, seconds since 1970.
    public var notAfterEpochSeconds: Int64? { OpenSSLSupport.epochSeconds(X509_get0_notAfter(pointer)) }
    /// Start of the validity window (`Date.distantPast` if the field is malformed).
    public var notBefore: Date { notBeforeEpochSeconds.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? .distantPast }
    /// End of the validity window (`Date.distantPast` if the field is malformed, so it never looks valid).
    public var notAfter: Date { notAfterEpochSeconds.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? .distantPast }

    /// Serial number as lowercase hex without leading zeros.
    public var serialNumberHex: String {
        guard let serial = X509_get0_serialNumber(pointer), let bn = ASN1_INTEGER_to_BN(serial, nil) else { return "" }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return "" }
        defer { CRYPTO_free(hex, #fileID, #line) }
        return String(cString: hex).lowercased()
    }

    /// X.509 version as written (1, 2 or 3).
    public var version: Int { Int(X509_get_version(pointer)) + 1 }

    /// Whether an extension with this dotted OID is present (critical or not).
    public func hasExtension(oid: String) -> Bool {
        guard let object = try? OpenSSLSupport.object(forOID: oid) else { return false }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(pointer, object, -1) >= 0
    }

    /// True when basicConstraints is present with `cA` TRUE (a v1 certificate is never a CA here).
    public var isCA: Bool {
        let flags = X509_get_extension_flags(pointer)
        return flags & UInt32(EXFLAG_BCONS) != 0 && flags & UInt32(EXFLAG_CA) != 0
    }

    /// The keyUsage bits, or nil when the certificate has no keyUsage extension.
    public var keyUsage: KeyUsage? {
        guard X509_get_extension_flags(pointer) & UInt32(EXFLAG_KUSAGE) != 0 else { return nil }
        return KeyUsage(rawValue: X509_get_key_usage(pointer) & 0xFFFF)
    }

    /// Whether the subject and issuer names are equal (a self-issued certificate).
    public var isSelfIssued: Bool {
        X509_NAME_cmp(X509_get_subject_name(pointer), X509_get_issuer_name(pointer)) == 0
    }

    /// SHA-256 of the DER encoding.
    public var sha256Fingerprint: [UInt8] { SHA256.hash(derEncoded) }

    /// SHA-256 fingerprint in the usual `AB:CD:…` form.
    public var sha256FingerprintHex: String {
        sha256Fingerprint.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    /// The subject public key, if it is an EC key on a curve Signet supports.
    package var publicKey: ECPublicKey {
        get throws(OpenSSLError) {
            guard let pkey = X509_get0_pubkey(pointer) else { throw OpenSSLError.drain("read certificate public key") }
            guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else {
                throw OpenSSLError(operation: "certificate public key is not an EC key (type \(EVP_PKEY_get_base_id(pkey)))")
            }
            // get1 returns a new reference to a legacy EC_KEY that the ECPublicKey then owns.
            guard let ecKey = EVP_PKEY_get1_EC_KEY(pkey) else { throw OpenSSLError.drain("extract EC key") }
            return try ECPublicKey(takingOwnership: ecKey)
        }
    }

    public var description: String { "X509Certificate(\(subject), serial \(serialNumberHex))" }

    public static func == (lhs: X509Certificate, rhs: X509Certificate) -> Bool { lhs.derEncoded == rhs.derEncoded }
    public func hash(into hasher: inout Hasher) { derEncoded.withUnsafeBytes { hasher.combine(bytes: $0) } }

    static func nameString(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        // RFC 2253 order and escaping, but keep UTF-8 readable instead of \XX escapes.
        // XN_FLAG_RFC2253 is a compound macro Swift cannot import; these are its parts.
        let stringFlags = Int32(ASN1_STRFLGS_ESC_2253) | Int32(ASN1_STRFLGS_ESC_CTRL) | Int32(ASN1_STRFLGS_UTF8_CONVERT)
            | Int32(ASN1_STRFLGS_DUMP_UNKNOWN) | Int32(ASN1_STRFLGS_DUMP_DER)
        let flags = UInt(stringFlags) | UInt(XN_FLAG_SEP_COMMA_PLUS) | UInt(XN_FLAG_DN_REV) | UInt(XN_FLAG_DUMP_UNKNOWN_FIELDS)
        let bytes = try? OpenSSLSupport.collectBIO("print name") { bio in
            X509_NAME_print_ex(bio, name, 0, flags) >= 0 ? 1 : 0
        }
        return String(decoding: bytes ?? [], as: UTF8.self)
    }
}

/// keyUsage bits as OpenSSL reports them (`KU_*`).
public struct KeyUsage: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let digitalSignature = KeyUsage(rawValue: 0x0080)
    public static let nonRepudiation = KeyUsage(rawValue: 0x0040)
    public static let keyEncipherment = KeyUsage(rawValue: 0x0020)
    public static let dataEncipherment = KeyUsage(rawValue: 0x0010)
    public static let keyAgreement = KeyUsage(rawValue: 0x0008)
    public static let keyCertSign = KeyUsage(rawValue: 0x0004)
    public static let cRLSign = KeyUsage(rawValue: 0x0002)

    /// The OpenSSL config-string names, for building the extension.
    var configNames: [String] {
        var names: [String] = []
        if contains(.digitalSignature) { names.append("digitalSignature") }
        if contains(.nonRepudiation) { names.append("nonRepudiation") }
        if contains(.keyEncipherment) { names.append("keyEncipherment") }
        if contains(.dataEncipherment) { names.append("dataEncipherment") }
        if contains(.keyAgreement) { names.append("keyAgreement") }
        if contains(.keyCertSign) { names.append("keyCertSign") }
        if contains(.cRLSign) { names.append("cRLSign") }
        return names
    }
}
