import AppStoreModels
import SignetCore
import SignetOpenSSL

/// A JWS protected header that passed every structural rule, with its `x5c`
/// certificates parsed. Immutable and shared through the header cache, so a steady
/// stream of notifications signed by the same Apple leaf parses its header once.
final class ParsedJWSHeader: Sendable {
    /// `x5c[0]`: the signing certificate.
    let leaf: X509Certificate
    /// `x5c[1]`: the intermediate CA.
    let intermediate: X509Certificate
    /// `x5c[2]`: must parse, otherwise ignored. Trust comes only from the configured
    /// roots, exactly as Apple's library does (its chain-A vectors carry a different
    /// x5c[2] than the configured root and still verify).
    let claimedRoot: X509Certificate
    /// Key of the chain cache.
    let chainKey: CertificatePairKey
    /// The leaf's P-256 key, or nil when the leaf has another key type (see `leafKeyProblem`).
    let leafKey: ECPublicKey?
    let leafKeyProblem: String?
    /// SHA-256 state after `segment.` when the header came from a JWS: the signing input
    /// of every JWS with this exact header starts with those bytes (the header cache keys
    /// on them), so ``SignaturePolicy`` hashes only the payload segment. Nil for a chain
    /// checked on its own.
    let signingInputPrefix: SHA256.Midstate?

    init(leaf: X509Certificate, intermediate: X509Certificate, claimedRoot: X509Certificate,
         signingInputPrefix: SHA256.Midstate? = nil) {
        self.signingInputPrefix = signingInputPrefix
        self.leaf = leaf
        self.intermediate = intermediate
        self.claimedRoot = claimedRoot
        self.chainKey = CertificatePairKey(leaf: leaf.derEncoded, intermediate: intermediate.derEncoded)
        do {
            let key = try leaf.publicKey
            if key.curve == .p256 {
                self.leafKey = key
                self.leafKeyProblem = nil
            } else {
                self.leafKey = nil
                self.leafKeyProblem = "the leaf certificate's key is on \(key.curve); ES256 needs P-256"
            }
        } catch {
            self.leafKey = nil
            self.leafKeyProblem = "the leaf certificate's key is not a usable EC key (\(error))"
        }
    }

    /// Applies the header rules, in this order:
    /// 1. base64url (strict) → `malformed_jws`; an RFC 8259 JSON object (UTF-8, no
    ///    trailing comma, no repeated member name) → `malformed_jws`
    /// 2. `alg` exactly "ES256" → `unsupported_algorithm`
    /// 3. no `crit` → `unsupported_header` (Signet understands no header extension)
    /// 4. `x5c`: exactly 3 strings, standard base64, each one DER certificate → `invalid_x5c`
    ///
    /// `jwk`, `jku`, `kid`, `x5u`, `x5t` and `typ` are ignored: none of them can supply
    /// trust, and the key always comes from `x5c[0]` after it chains to a configured root.
    static func parse(segment: UnsafeRawBufferPointer, role: JWSRole) throws(RecordRejection) -> ParsedJWSHeader {
        let json: [UInt8]
        do {
            json = try Base64.decodeURL(segment)
        } catch {
            throw RecordRejection(.malformedJWS, "\(role.field): the header segment is not strict base64url (\(error))")
        }
        // Signet's strict reader, not Foundation (which on Linux accepts trailing commas, raw
        // control characters and UTF-16): exactly RFC 8259, and a repeated member name is
        // rejected (RFC 7515 §4), so no two JWS libraries can read a different `alg`.
        let object: JSONElement
        do {
            object = try JSONElement.parse(json, duplicateKeys: .reject)
        } catch {
            throw RecordRejection(.malformedJWS, "\(role.field): the JWS header is not valid JSON (\(error))")
        }
        guard object.isObject else {
            throw RecordRejection(.malformedJWS, "\(role.field): the JWS header is JSON but not an object")
        }

        guard let algValue = object["alg"] else {
            throw RecordRejection(.unsupportedAlgorithm, "\(role.field): the JWS header has no \"alg\"; App Store data is always ES256")
        }
        guard let alg = algValue.stringValue, alg == "ES256" else {
            throw RecordRejection(
                .unsupportedAlgorithm,
                "\(role.field): JWS alg is \(describe(algValue)); only \"ES256\" is accepted (App Store data is always ES256; anything else is forged or not from Apple)")
        }
        if let crit = object["crit"] {
            throw RecordRejection(
                .unsupportedHeader,
                "\(role.field): the JWS header carries \"crit\" (\(describe(crit))); Signet implements no JWS extensions, so it must refuse it (RFC 7515 §4.1.11)")
        }

        guard let x5cValue = object["x5c"] else {
            throw RecordRejection(.invalidX5C, "\(role.field): the JWS header has no \"x5c\" certificate chain")
        }
        guard let x5c = x5cValue.arrayValue else {
            throw RecordRejection(.invalidX5C, "\(role.field): \"x5c\" is not an array")
        }
        guard x5c.count == 3 else {
            throw RecordRejection(
                .invalidX5C, "\(role.field): \"x5c\" holds \(x5c.count) certificates; App Store chains have exactly 3 (leaf, intermediate, root)")
        }
        var certificates: [X509Certificate] = []
        let names = ["leaf", "intermediate", "root"]
        for (index, element) in x5c.enumerated() {
            guard let text = element.stringValue else {
                throw RecordRejection(.invalidX5C, "\(role.field): x5c[\(index)] (\(names[index])) is not a string")
            }
            let der: [UInt8]
            do {
                der = try Base64.decode(text)
            } catch {
                throw RecordRejection(.invalidX5C, "\(role.field): x5c[\(index)] (\(names[index])) is not strict standard base64 (\(error))")
            }
            do {
                certificates.append(try X509Certificate(derEncoded: der))
            } catch {
                throw RecordRejection(.invalidX5C, "\(role.field): x5c[\(index)] (\(names[index])) is not a DER X.509 certificate (\(error))")
            }
        }
        return ParsedJWSHeader(
            leaf: certificates[0], intermediate: certificates[1], claimedRoot: certificates[2],
            signingInputPrefix: SHA256.Midstate(prefix: segment, separator: UInt8(ascii: ".")))
    }

    private static func describe(_ value: JSONElement) -> String {
        switch value {
        case .string(let text): "\"\(text)\""
        case .null: "null"
        default: "a non-string value"
        }
    }
}

/// Which signed field is being verified; names the field in every rejection detail.
enum JWSRole: Sendable {
    case notification
    case transaction
    case renewalInfo
    case appTransaction
    /// A real-time retention request (`RealtimeRequestBody.signedPayload`).
    case realtimeRequest
    /// A chain checked on its own (``AppStoreVerifier/checkCertificateChain(leaf:intermediate:at:)``).
    case certificateChain

    var field: String {
        switch self {
        case .notification: "signedPayload"
        case .transaction: "signedTransactionInfo"
        case .renewalInfo: "signedRenewalInfo"
        case .appTransaction: "signedAppTransactionInfo"
        case .realtimeRequest: "signedPayload (realtime request)"
        case .certificateChain: "certificate chain"
        }
    }
}
