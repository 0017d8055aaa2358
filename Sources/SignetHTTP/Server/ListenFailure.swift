import Foundation
import NIOCore
import SignetCore

/// Why a listener could not start, in an operator's words: which listener, which address,
/// which setting chooses it, and the cause without the networking library's internals
/// (`bind(descriptor:ptr:bytes:)`, `SocketAddressError.UnknownHost`).
///
/// A ``ConfigError`` (without a file position): a port taken by another process or an
/// address this machine does not have is fixed in the configuration or the environment,
/// so `signet run` exits 2 for it like for any other setting.
enum ListenFailure {
    /// - Parameters:
    ///   - listener: what listens, as a reader names it ("the webhook").
    ///   - setting: the pipeline key that sets the address ("source.address").
    static func error(listener: String, address: String, setting: String, cause: any Error) -> ConfigError {
        ConfigError("cannot listen on \(address) for \(listener) (\(setting)): \(reason(cause))", at: nil)
    }

    /// The cause in a sentence.
    static func reason(_ error: any Error) -> String {
        if let io = error as? IOError {
            switch io.errnoCode {
            case EADDRINUSE: return "the address is already in use (another process listens on that port)"
            case EADDRNOTAVAIL: return "no network interface of this machine has that address"
            case EACCES: return "permission denied (ports below 1024 need privileges)"
            default: return String(cString: strerror(io.errnoCode)).lowercased()
            }
        }
        if let unknown = error as? SocketAddressError.UnknownHost {
            return "the host name '\(unknown.host)' does not resolve (\(unknown.errorDescription.lowercased()))"
        }
        if let address = error as? SocketAddressError {
            switch address {
            case .failedToParseIPString(let text): return "'\(text)' is not an IP address"
            case .unsupported: return "that kind of address is not supported"
            default: return "the address is not usable"
            }
        }
        return "\(error)"
    }
}
