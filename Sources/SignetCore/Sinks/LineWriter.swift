import Foundation

/// Writes newline-terminated messages to a file descriptor, completely or not at all
/// from the caller's point of view (short writes and EINTR are retried).
struct LineWriter {
    static func write(_ messages: [OutputMessage], to fd: Int32) throws {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(messages.reduce(0) { $0 + $1.value.count + 1 })
        for message in messages {
            buffer.append(contentsOf: message.value)
            buffer.append(UInt8(ascii: "\n"))
        }
        try buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Foundation.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    throw SinkError("write failed: \(String(cString: strerror(errno)))")
                }
                offset += written
            }
        }
    }
}

/// A sink could not deliver.
public struct SinkError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
