/// Carries one OCSP request to a responder: an HTTP POST of `application/ocsp-request`.
///
/// A protocol so SignetJWS needs no HTTP client: SignetHTTP's `AsyncHTTPClientOCSPTransport`
/// is the real one (SignetJWS is linked by the fuzz target and embedders that never go
/// online, and AsyncHTTPClient brings SwiftNIO and BoringSSL), tests count or delay requests
/// with their own.
public protocol OCSPTransport: Sendable {
    /// POSTs `request` to `url` and returns the body of a `200` answer.
    ///
    /// The caller also enforces `timeout` (it stops waiting and cancels the task), so a
    /// transport should stop its request when cancelled.
    func post(_ request: [UInt8], to url: String, timeout: Duration) async throws(OCSPTransportError) -> [UInt8]
}

/// Why a transport brought back no OCSP response.
public enum OCSPTransportError: Error, Sendable, Hashable {
    /// No connection, a refused or broken one, or no complete answer.
    case unreachable(String)
    /// The answer did not arrive within the timeout.
    case deadlineExceeded
    /// The responder answered an HTTP status other than 200.
    case httpStatus(Int)
}
