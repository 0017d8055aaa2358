import Foundation

/// Why a scrape failed.
public struct ScrapeError: Error, CustomStringConvertible {
    public var description: String
}

/// GET with curl (an independent client), off the cooperative pool.
public func curl(_ url: String) async throws -> String {
    try await offPool {
        let result = try SignetProcess.run(executable: ChildProcess.env, ["curl", "-sS", "--max-time", "10", url], timeout: 20)
        guard result.exitCode == 0 else { throw ScrapeError(description: "curl \(url) failed: \(result.stderr)") }
        return result.stdoutText
    }
}

/// Parses Prometheus text format: `name{labels}` -> value (comments skipped).
public func parsePrometheus(_ text: String) -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
        samples[String(line[..<space])] = value
    }
    return samples
}

/// The port in a `signet run` log's "listening on ADDRESS:PORT" line (text or JSON logs), once
/// it was written (a listener configured on port 0).
public func listeningPort(in stderr: String) -> Int? {
    guard let line = stderr.split(separator: "\n").first(where: { $0.contains("listening on ") }),
        let marker = line.range(of: "listening on ")
    else { return nil }
    let address = line[marker.upperBound...].prefix { $0 != " " && $0 != "\"" }
    guard let colon = address.lastIndex(of: ":") else { return nil }
    return Int(address[address.index(after: colon)...])
}
