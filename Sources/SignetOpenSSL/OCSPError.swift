import COpenSSL

/// Why an OCSP request could not be built or an OCSP response was not accepted.
///
/// Each case is one reason a caller may treat differently: a responder saying
/// ``responderStatus(_:)`` `tryLater` is asked again, a response that does not parse or
/// whose signature does not verify is never trusted.
public enum OCSPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request could not be built or encoded (an OpenSSL failure, not the input's fault).
    case request(String)
    /// The response is not one DER `OCSPResponse` (truncated, garbage, trailing bytes), or
    /// a successful one carries no basic response.
    case malformed(String)
    /// The responder answered, but not `successful`: no certificate status is inside.
    case responderStatus(OCSPResponderStatus)
    /// The request carried a nonce and the response carries a different one (a replay or a mix-up).
    case nonceMismatch
    /// The signature does not verify, or the signer is neither the issuer nor a responder
    /// the issuer delegated with the OCSP-signing extended key usage.
    case badSignature(String)
    /// The response speaks about other certificates only.
    case certificateNotInResponse
    /// thisUpdate lies in the future (beyond the leeway), or nextUpdate before thisUpdate.
    case notYetValid(thisUpdate: Int64)
    /// nextUpdate has passed (beyond the leeway): the answer is stale, not an answer about now.
    case stale(nextUpdate: Int64)

    public var description: String {
        switch self {
        case .request(let detail): "cannot build OCSP request: \(detail)"
        case .malformed(let detail): "malformed OCSP response: \(detail)"
        case .responderStatus(let status): "OCSP responder answered \(status)"
        case .nonceMismatch: "OCSP response nonce does not match the request's"
        case .badSignature(let detail): "OCSP response signature not trusted: \(detail)"
        case .certificateNotInResponse: "OCSP response has no status for the certificate asked about"
        case .notYetValid(let thisUpdate): "OCSP response thisUpdate \(thisUpdate) is in the future"
        case .stale(let nextUpdate): "OCSP response is stale (nextUpdate \(nextUpdate) has passed)"
        }
    }
}

/// An `OCSPResponseStatus` other than `successful` (RFC 6960 §4.2.1).
public enum OCSPResponderStatus: Sendable, Hashable, CustomStringConvertible {
    case malformedRequest
    case internalError
    case tryLater
    case sigRequired
    case unauthorized
    /// A value RFC 6960 does not define (4 is unused).
    case other(Int)

    init(code: Int32) {
        switch code {
        case OCSP_RESPONSE_STATUS_MALFORMEDREQUEST: self = .malformedRequest
        case OCSP_RESPONSE_STATUS_INTERNALERROR: self = .internalError
        case OCSP_RESPONSE_STATUS_TRYLATER: self = .tryLater
        case OCSP_RESPONSE_STATUS_SIGREQUIRED: self = .sigRequired
        case OCSP_RESPONSE_STATUS_UNAUTHORIZED: self = .unauthorized
        default: self = .other(Int(code))
        }
    }

    public var description: String {
        switch self {
        case .malformedRequest: "malformedRequest"
        case .internalError: "internalError"
        case .tryLater: "tryLater"
        case .sigRequired: "sigRequired"
        case .unauthorized: "unauthorized"
        case .other(let code): "status \(code)"
        }
    }
}
