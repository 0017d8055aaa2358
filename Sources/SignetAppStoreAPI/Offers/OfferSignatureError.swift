public import SignetOpenSSL

/// Why an offer signature was not made.
public enum OfferSignatureError: Error, Sendable, CustomStringConvertible {
    /// An input Apple would refuse (an empty product id, a request that is not a JSON object):
    /// nothing was signed.
    case invalidInput(String)
    /// OpenSSL could not sign (the key is unusable).
    case signingFailed(OpenSSLError)

    /// What went wrong, for logs and API answers (never the key).
    public var description: String {
        switch self {
        case .invalidInput(let reason): "cannot sign the offer: \(reason)"
        case .signingFailed(let error): "signing the offer failed: \(error)"
        }
    }
}
