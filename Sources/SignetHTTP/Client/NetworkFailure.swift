import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

/// A failed exchange with a remote server (an OCSP responder, a CRL, a receiver) in an
/// operator's words: "connection refused", "the host name 'x' does not resolve", "the
/// connection timed out", instead of NIO's and AsyncHTTPClient's type descriptions
/// ("connection reset (error set): Connection refused (errno: 111)").
enum NetworkFailure {
    static func describe(_ error: any Error) -> String {
        if let connection = error as? NIOConnectionError {
            if connection.dnsAError != nil || connection.dnsAAAAError != nil {
                return "the host name '\(connection.host)' does not resolve"
            }
            if let first = connection.connectionErrors.first { return describe(first.error) }
        }
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        if let channel = error as? ChannelError {
            switch channel {
            case .connectTimeout: return "the connection timed out"
            case .ioOnClosedChannel, .alreadyClosed, .eof: return "the connection was closed before an answer"
            default: break
            }
        }
        if let client = error as? HTTPClientError {
            if client == .connectTimeout { return "the connection timed out" }
            if client == .readTimeout || client == .deadlineExceeded { return "no answer in time" }
            if client == .remoteConnectionClosed { return "the server closed the connection before answering" }
        }
        return "\(error)"
    }
}
