import Foundation

/// Why no free port was found.
public struct FreePortError: Error, CustomStringConvertible {
    public var description: String
}

/// A TCP port on 127.0.0.1 nothing listens on now (bound to port 0 and released), for a
/// server a test starts as a separate process.
public func freeLocalPort() throws(FreePortError) -> Int {
    let socket = try LocalPortHolder(listening: false)
    defer { socket.close() }
    return socket.port
}

/// A TCP socket bound to a free port of 127.0.0.1 and kept until ``close()``: with
/// `listening`, the port is taken as by another server (for tests of a listener that
/// cannot start).
public final class LocalPortHolder: Sendable {
    public let port: Int
    private let descriptor: Int32

    public init(listening: Bool) throws(FreePortError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FreePortError(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound, !listening || listen(fd, 16) == 0 else {
            Glibc.close(fd)
            throw FreePortError(description: "cannot find a free port")
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    public func close() {
        Glibc.close(descriptor)
    }
}
