import COpenSSL

/// A failure reported by libcrypto, with the drained contents of OpenSSL's
/// thread-local error queue.
///
/// Every wrapper that sees an OpenSSL call fail builds one of these through
/// `OpenSSLError/drain(_:)`, which also empties the queue: OpenSSL keeps errors per
/// thread, and a stale entry left behind would be misattributed to the next,
/// unrelated call on the same thread.
public struct OpenSSLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What Signet was trying to do ("parse DER certificate", "sign certificate", ...).
    public var operation: String
    /// OpenSSL's own error strings, oldest first (may be empty).
    public var details: [String]

    public init(operation: String, details: [String] = []) {
        self.operation = operation
        self.details = details
    }

    public var description: String {
        details.isEmpty ? operation : "\(operation): \(details.joined(separator: "; "))"
    }

    /// Builds an error for `operation` from, and clears, the calling thread's OpenSSL error queue.
    static func drain(_ operation: String) -> OpenSSLError {
        OpenSSLError(operation: operation, details: drainErrorQueue())
    }

    /// Empties the calling thread's OpenSSL error queue and returns its messages.
    @discardableResult
    static func drainErrorQueue() -> [String] {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            // Bound the loop defensively; OpenSSL's queue holds at most 16 entries.
            if messages.count >= 16 { ERR_clear_error(); break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages
    }
}
