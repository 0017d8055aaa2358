import Foundation

/// Writes newline-terminated messages to a file descriptor, completely or not at all
/// from the caller's point of view (short writes and EINTR are retried).
struct LineWriter {
    /// - Parameter destination: what `fd` is, for error messages ("stdout", a file path).
    static func write(_ messages: [OutputMessage], to fd: Int32, destination: String) throws(SinkError) {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(messages.reduce(0) { $0 + $1.value.count + 1 })
        for message in messages {
            buffer.append(contentsOf: message.value)
            buffer.append(UInt8(ascii: "\n"))
        }
        var failure: Int32 = 0
        buffer.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let written = Foundation.write(fd, base + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure != 0 { throw SinkError(writing: destination, errno: failure) }
    }
}
