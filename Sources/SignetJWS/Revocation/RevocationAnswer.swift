public import Foundation
public import SignetOpenSSL

/// What an online revocation check concluded about one certificate.
///
/// Only ``revoked(reason:date:)`` is a verdict against the certificate; a
/// ``failed(_:)`` check says nothing about it and is worth asking again later.
public enum RevocationAnswer: Sendable, Hashable, CustomStringConvertible {
    /// The issuer (or its delegate) says good; the answer holds until `nextUpdate`.
    case good(nextUpdate: Date)
    /// The issuer says revoked, since `date`: a permanent rejection.
    case revoked(reason: OCSPSingleResponse.RevocationReason?, date: Date)
    /// No usable answer now: every such failure is retryable.
    case failed(RevocationFailure)

    public var description: String {
        switch self {
        case .good(let nextUpdate): "good until \(nextUpdate)"
        case .revoked(let reason, let date): "revoked (\(reason?.description ?? "no reason given")) at \(date)"
        case .failed(let failure): "no answer: \(failure)"
        }
    }
}

/// Why an online revocation check gave no answer (all retryable: none says the certificate is bad).
public enum RevocationFailure: Sendable, Hashable, CustomStringConvertible {
    /// The responder does not know the certificate (status `unknown`).
    case unknown
    /// The responder answered `tryLater` (overloaded, RFC 6960).
    case tryLater
    /// The responder answered `internalError`.
    case internalError
    /// The responder answered another non-successful status (malformedRequest, sigRequired, unauthorized).
    case refused(String)
    /// No connection, a refused one, a broken one, or an HTTP status other than 200.
    case unreachable(String)
    /// No answer within the deadline.
    case deadlineExceeded
    /// The newest answer's nextUpdate has passed.
    case stale(nextUpdate: Date)
    /// The body is not a DER OCSP response (or CRL) about this certificate (or thisUpdate lies in the future).
    case malformed(String)
    /// The signature does not verify, the signer is not the issuer or its delegate, or the nonce differs
    /// (or a CRL's issuer name or signature is not the issuer's).
    case untrusted(String)
    /// The certificate names no http(s) OCSP responder in its authorityInfoAccess.
    case noResponder

    /// A short stable name per class, for logs and (slice 2) metrics labels.
    public var name: String {
        switch self {
        case .unknown: "unknown"
        case .tryLater: "try_later"
        case .internalError: "internal_error"
        case .refused: "refused"
        case .unreachable: "unreachable"
        case .deadlineExceeded: "deadline_exceeded"
        case .stale: "stale"
        case .malformed: "malformed"
        case .untrusted: "untrusted"
        case .noResponder: "no_responder"
        }
    }

    public var description: String {
        switch self {
        case .refused(let detail), .unreachable(let detail), .malformed(let detail), .untrusted(let detail): "\(name): \(detail)"
        case .stale(let nextUpdate): "stale: nextUpdate \(nextUpdate) has passed"
        default: name
        }
    }

    /// The class of a transport's failure.
    init(_ error: OCSPTransportError) {
        switch error {
        case .deadlineExceeded: self = .deadlineExceeded
        case .unreachable(let detail): self = .unreachable(detail)
        case .httpStatus(let status): self = .unreachable("HTTP status \(status)")
        }
    }

    /// The class of a CRL OpenSSL or the list's own rules did not accept.
    init(_ error: CRLError) {
        switch error {
        case .stale(let nextUpdate): self = .stale(nextUpdate: Date(timeIntervalSince1970: TimeInterval(nextUpdate)))
        case .wrongIssuer, .badSignature: self = .untrusted(error.description)
        case .malformed, .unsupported, .notYetValid: self = .malformed(error.description)
        }
    }

    /// The class of a response OpenSSL did not accept.
    init(_ error: OCSPError) {
        switch error {
        case .responderStatus(.tryLater): self = .tryLater
        case .responderStatus(.internalError): self = .internalError
        case .responderStatus(let other): self = .refused(other.description)
        case .stale(let nextUpdate): self = .stale(nextUpdate: Date(timeIntervalSince1970: TimeInterval(nextUpdate)))
        case .nonceMismatch, .badSignature: self = .untrusted(error.description)
        case .malformed, .certificateNotInResponse, .notYetValid, .request: self = .malformed(error.description)
        }
    }
}
