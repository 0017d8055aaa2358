import Foundation
public import SignetOpenSSL

/// Produces compact ES256 JWS the way the App Store does:
/// header `{"alg":"ES256","x5c":[leaf,intermediate,root]}`, base64url segments, and a
/// raw 64-byte `r‖s` signature over `header.payload`.
///
/// Every part is a knob so tests can forge: another `alg` (or none), extra header
/// members (`crit`, `jwk`, ...), a replaced header, arbitrary `x5c` strings, another
/// signing key, or a transformed signature.
public struct JWSSigner: Sendable {
    /// The key that signs (normally the leaf's).
    public var key: ECPrivateKey
    /// Certificates for `x5c`, in order; ignored when ``x5cStrings`` is set.
    public var chain: [X509Certificate]
    /// Raw `x5c` entries (e.g. garbage base64); nil means base64 of ``chain``.
    public var x5cStrings: [String]?
    /// Omit `x5c` entirely.
    public var omitX5C: Bool
    /// `alg` value; nil omits the member.
    public var alg: String?
    /// Extra members appended verbatim inside the header object, e.g. `"crit":["exp"]`.
    public var extraHeaderMembers: [String]
    /// The exact header bytes to use instead of building one.
    public var headerOverride: [UInt8]?
    /// Applied to the raw signature before encoding (truncate, DER-encode, flip a bit...).
    public var transformSignature: (@Sendable ([UInt8]) -> [UInt8])?

    /// A signer with the leaf key and `[leaf, intermediate, root]` of `pki`.
    public init(pki: TestPKI) {
        self.init(key: pki.leafKey, chain: pki.chain)
    }

    public init(key: ECPrivateKey, chain: [X509Certificate]) {
        self.key = key
        self.chain = chain
        self.x5cStrings = nil
        self.omitX5C = false
        self.alg = "ES256"
        self.extraHeaderMembers = []
        self.headerOverride = nil
        self.transformSignature = nil
    }

    /// The header JSON this signer puts in the first segment.
    public var headerJSON: [UInt8] {
        if let headerOverride { return headerOverride }
        var members: [String] = []
        if let alg { members.append("\"alg\":\(Self.jsonString(alg))") }
        if !omitX5C {
            let entries = x5cStrings ?? chain.map { Base64.encode($0.derEncoded) }
            members.append("\"x5c\":[" + entries.map(Self.jsonString).joined(separator: ",") + "]")
        }
        members.append(contentsOf: extraHeaderMembers)
        return Array(("{" + members.joined(separator: ",") + "}").utf8)
    }

    /// Signs `payload` (the exact JSON bytes) into a compact JWS.
    public func sign(payload: [UInt8]) throws(OpenSSLError) -> String {
        let signingInput = Base64.encodeURL(headerJSON) + "." + Base64.encodeURL(payload)
        var signature = try key.signES256(Array(signingInput.utf8))
        if let transformSignature { signature = transformSignature(signature) }
        return signingInput + "." + Base64.encodeURL(signature)
    }

    /// Signs a JSON string's UTF-8 bytes.
    public func sign(json: String) throws(OpenSSLError) -> String {
        try sign(payload: Array(json.utf8))
    }

    /// Signs an `Encodable` payload (sorted keys, so the output is stable).
    public func sign<T: Encodable>(encoding value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try sign(payload: Array(encoder.encode(value)))
    }

    /// Joins already-encoded parts into a compact JWS (for hand-made forgeries).
    public static func compact(header: [UInt8], payload: [UInt8], signature: [UInt8]) -> String {
        Base64.encodeURL(header) + "." + Base64.encodeURL(payload) + "." + Base64.encodeURL(signature)
    }

    private static func jsonString(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
