import Foundation
public import SignetOpenSSL

/// An App Store Connect in-app purchase API key and the app it acts for: what every
/// request's JWT is signed with and claims.
///
/// Create the key in App Store Connect (Users and Access → Integrations → In-App Purchase);
/// Apple gives a `.p8` file (a PKCS#8 P-256 private key in PEM), its key id, and the
/// team's issuer id. The private key never appears in ``description``, in errors or logs.
public struct AppStoreAPICredentials: Sendable, CustomStringConvertible {
    /// The key id (`kid` of the JWT header), e.g. `2X9R4HXF34`.
    public let keyId: String
    /// The issuer id (`iss`), a UUID shown above the key list in App Store Connect.
    public let issuerId: String
    /// The app's bundle id (`bid`).
    public let bundleId: String
    /// The P-256 signing key (ES256).
    let privateKey: ECPrivateKey

    /// Credentials from a key already loaded. Throws when the key is not on P-256 (ES256
    /// needs it) or an identifier is empty.
    public init(keyId: String, issuerId: String, bundleId: String, privateKey: ECPrivateKey) throws(AppStoreAPIConfigurationError) {
        for (name, value) in [("key id", keyId), ("issuer id", issuerId), ("bundle id", bundleId)]
        where value.trimmingCharacters(in: .whitespaces).isEmpty {
            throw AppStoreAPIConfigurationError("the App Store Server API \(name) is empty")
        }
        guard privateKey.curve == .p256 else {
            throw AppStoreAPIConfigurationError(
                "the App Store Server API key is on \(privateKey.curve), not P-256: ES256 needs the .p8 key App Store Connect issued")
        }
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.privateKey = privateKey
    }

    /// Credentials from the `.p8` file's text (`-----BEGIN PRIVATE KEY-----`, PKCS#8).
    public init(keyId: String, issuerId: String, bundleId: String, privateKeyPEM: String) throws(AppStoreAPIConfigurationError) {
        let key: ECPrivateKey
        do {
            key = try ECPrivateKey(pemEncoded: privateKeyPEM)
        } catch {
            // OpenSSL's detail says why (not PEM, not EC, ...) and never contains the key.
            throw AppStoreAPIConfigurationError("the App Store Server API private key is not a usable EC key in PEM: \(error)")
        }
        try self.init(keyId: keyId, issuerId: issuerId, bundleId: bundleId, privateKey: key)
    }

    /// Credentials from a `.p8` file on disk.
    public init(keyId: String, issuerId: String, bundleId: String, privateKeyFile path: String) throws(AppStoreAPIConfigurationError) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw AppStoreAPIConfigurationError("cannot read the App Store Server API private key file \(path): \(error.localizedDescription)")
        }
        do {
            try self.init(keyId: keyId, issuerId: issuerId, bundleId: bundleId, privateKeyPEM: text)
        } catch {
            throw AppStoreAPIConfigurationError("\(path): \(error.message)")
        }
    }

    /// Identifies the key without revealing it.
    public var description: String {
        "AppStoreAPICredentials(keyId: \(keyId), issuerId: \(issuerId), bundleId: \(bundleId), privateKey: <redacted>)"
    }
}

/// Why the App Store Server API client cannot be configured; the message names the setting.
public struct AppStoreAPIConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
