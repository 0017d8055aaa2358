public import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import SignetCore
public import SignetJWS

/// The revocation transport over AsyncHTTPClient: a POST of `application/ocsp-request`, the
/// body of a 200 answer back (at most 64 KiB; Apple's responses are about 2), and a GET of a
/// CRL (at most 8 MiB; Apple's root CRL is under 1 KiB, a busy CA's a few hundred).
///
/// It lives here, not in SignetJWS beside the checker, so SignetJWS (and the fuzz target
/// and embedders linking it) stays free of SwiftNIO; the client is AsyncHTTPClient as for
/// every other outgoing request of Signet (the http sink, the App Store Server API client).
public struct AsyncHTTPClientOCSPTransport: OCSPTransport {
    private let client: HTTPClient

    /// The largest OCSP response read; a longer body is `unreachable`, not parsed.
    static let maxResponseBytes = 64 << 10
    /// The largest CRL read.
    static let maxCRLBytes = 8 << 20

    /// The client every transport shares unless given another: one connection pool for every
    /// checker, alive for the whole process (so never shut down, like `HTTPClient.shared`).
    ///
    /// A refused connection fails the request at once (`retryConnectionEstablishment` off):
    /// AsyncHTTPClient would otherwise retry it until the deadline and the caller would wait
    /// the whole deadline for what is, either way, a retryable `unreachable`. Redirects are
    /// not followed: an OCSP responder answers where the certificate says.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// - Parameter client: ``sharedClient`` unless the embedder brings its own.
    public init(client: HTTPClient = AsyncHTTPClientOCSPTransport.sharedClient) {
        self.client = client
    }

    public func post(_ request: [UInt8], to url: String, timeout: Duration) async throws(OCSPTransportError) -> [UInt8] {
        var outgoing = HTTPClientRequest(url: url)
        outgoing.method = .POST
        outgoing.headers.add(name: "Content-Type", value: "application/ocsp-request")
        outgoing.body = .bytes(ByteBuffer(bytes: request))
        return try await execute(outgoing, timeout: timeout, upTo: Self.maxResponseBytes)
    }

    public func get(_ url: String, timeout: Duration) async throws(OCSPTransportError) -> [UInt8] {
        try await execute(HTTPClientRequest(url: url), timeout: timeout, upTo: Self.maxCRLBytes)
    }

    private func execute(_ request: HTTPClientRequest, timeout: Duration, upTo limit: Int) async throws(OCSPTransportError) -> [UInt8] {
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(timeout.clampedNanoseconds))
            guard response.status.code == 200 else { throw OCSPTransportError.httpStatus(Int(response.status.code)) }
            let body = try await response.body.collect(upTo: limit)
            return Array(body.readableBytesView)
        } catch let error as OCSPTransportError {
            throw error
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .connectTimeout || error == .readTimeout {
            throw .deadlineExceeded
        } catch {
            throw .unreachable(NetworkFailure.describe(error))
        }
    }
}
