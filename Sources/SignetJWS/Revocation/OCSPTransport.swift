/// Carries the revocation checker's requests: an OCSP request POSTed as
/// `application/ocsp-request`, and a CRL fetched with a GET.
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

    /// GETs `url` (a CRL distribution point) and returns the body of a `200` answer.
    ///
    /// Same timeout contract as ``post(_:to:timeout:)``. The default fails: a transport
    /// written before CRL fallback existed keeps compiling and simply has none.
    func get(_ url: String, timeout: Duration) async throws(OCSPTransportError) -> [UInt8]
}

extension OCSPTransport {
    public func get(_ url: String, timeout: Duration) async throws(OCSPTransportError) -> [UInt8] {
        throw .unreachable("this transport fetches no CRLs")
    }
}

/// Why a transport brought back no OCSP response (or CRL).
public enum OCSPTransportError: Error, Sendable, Hashable {
    /// No connection, a refused or broken one, or no complete answer.
    case unreachable(String)
    /// The answer did not arrive within the timeout.
    case deadlineExceeded
    /// The responder answered an HTTP status other than 200.
    case httpStatus(Int)
}
