public import SignetOpenSSL

/// Apple's trust anchors for App Store signed data, embedded in the binary.
///
/// The DER bytes live in `AppleRootCAG3.swift`; this type parses them once, on first
/// use, into shared immutable certificates.
public enum AppleRoots {
    /// SHA-256 of Apple Root CA - G3's DER encoding, as Apple publishes it.
    public static let appleRootCAG3SHA256 = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"

    /// Apple Root CA - G3, the root of every App Store Server Notification chain.
    public static var appleRootCAG3: X509Certificate { parsedAppleRootCAG3 }

    /// The default trust anchors for `AppStoreVerifier`: just Apple Root CA - G3.
    public static var all: [X509Certificate] { [appleRootCAG3] }

    /// Whether `certificate` is Apple Root CA - G3 (compared by exact DER bytes).
    public static func isAppleRootCAG3(_ certificate: X509Certificate) -> Bool {
        certificate.derEncoded == appleRootCAG3DER
    }

    private static let parsedAppleRootCAG3: X509Certificate = {
        do {
            return try X509Certificate(derEncoded: appleRootCAG3DER)
        } catch {
            // The bytes are a compile-time constant whose fingerprint a test pins; failing
            // to parse them means the binary itself is corrupt, not that input was bad.
            fatalError("embedded Apple Root CA - G3 does not parse: \(error)")
        }
    }()
}
