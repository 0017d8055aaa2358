import SignetOpenSSL

/// The `Signet-Signature` header of the http sink's requests: proof that Signet sent the body,
/// and when, in the scheme Stripe's and others' webhooks use (docs/operations.md):
///
///     Signet-Signature: t=1795821415,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd
///
/// `v1` is the hex HMAC-SHA256, under a shared secret, of the timestamp, a dot and the exact
/// body bytes (`"1795821415." + body`). Signing the timestamp lets a receiver refuse a captured
/// request replayed later (outside its tolerance, 5 minutes in the docs' check); while a secret
/// is being rotated the header carries one `v1` per secret, the current one first, and a
/// receiver accepts a request when any of them matches a secret it holds.
public struct EventSignature: Sendable {
    /// The secrets to sign with: the current one, then the previous one while rotating.
    public let secrets: [[UInt8]]

    public init(secrets: [[UInt8]]) {
        self.secrets = secrets
    }

    /// The header's value for `body` sent at `timestamp` (seconds since 1970).
    public func header(for body: [UInt8], at timestamp: Int64) -> String {
        let signed = Array("\(timestamp).".utf8) + body
        return (["t=\(timestamp)"] + secrets.map { "v1=" + HMACSHA256.hex(HMACSHA256.authenticationCode(for: signed, key: $0)) })
            .joined(separator: ",")
    }
}
