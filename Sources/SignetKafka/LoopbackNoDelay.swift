import Foundation

/// Turns off Nagle's algorithm on the mock brokers' listening sockets.
///
/// librdkafka's mock broker leaves Nagle on; its produce responses then sit until the
/// client's delayed ACK fires (~40 ms on Linux), so every acks=all round trip on the local
/// broker cost ~44 ms where a real Kafka broker (which sets TCP_NODELAY on every connection)
/// answers in about a millisecond. Linux copies TCP_NODELAY from a listening socket to the
/// connections it accepts, so setting it once on the listeners covers every client.
enum LoopbackNoDelay {
    /// Sets TCP_NODELAY on this process's TCP sockets bound to 127.0.0.1 at `ports`.
    /// Returns how many sockets were changed.
    @discardableResult
    static func apply(toListenersOn ports: Set<UInt16>) -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return 0 }
        var changed = 0
        for fd in entries.compactMap(Int32.init) {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0, address.sin_family == sa_family_t(AF_INET),
                ports.contains(UInt16(bigEndian: address.sin_port))
            else { continue }
            var type: Int32 = 0
            var typeLength = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeLength) == 0, type == Int32(SOCK_STREAM.rawValue) else {
                continue
            }
            var on: Int32 = 1
            if setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 { changed += 1 }
        }
        return changed
    }
}
