/// A `host:port` to listen on (`127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:0` for any free port).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port`; nil when either part is missing or the port is out of range.
    public init?(parsing text: String) {
        var host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }  // IPv6 needs brackets
        }
        host = host.drop(while: { $0 == " " })
        guard !host.isEmpty, let port = Int(portText), (0...65_535).contains(port) else { return nil }
        self.host = String(host)
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether only this machine can connect.
    public var isLoopback: Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }
}
