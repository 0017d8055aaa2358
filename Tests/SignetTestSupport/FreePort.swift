import Foundation

/// Why no free port was found.
public struct FreePortError: Error, CustomStringConvertible {
    public var description: String
}

/// A TCP port on 127.0.0.1 nothing listens on now (bound to port 0 and released), for a
/// server a test starts as a separate process.
public func freeLocalPort() throws(FreePortError) -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw FreePortError(description: "socket() failed") }
    defer { close(fd) }
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
    guard bound else { throw FreePortError(description: "cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}
