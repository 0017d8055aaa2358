public import Foundation
public import SignetOpenSSL

/// A real OCSP responder for tests: `openssl ocsp` serving an index file over HTTP on a free
/// port, answering for one issuer with a signer (the issuer itself or its delegate).
///
/// OpenSSL 3.0's `-port` takes a number only, so it listens on every interface of the test
/// machine (on a port nothing else uses). It logs each request on stderr, which is how
/// ``requestCount`` counts what reached it. ``stop()`` (or deinit) kills it and removes its folder.
public final class OCSPTestResponder: Sendable {
    /// One line of the responder's index (the `openssl ca` database format).
    public enum Entry: Sendable {
        case valid(X509Certificate)
        /// Revoked at `date` for `reason` (a CRLReason name such as `keyCompromise`; empty: none given).
        case revoked(X509Certificate, date: Date, reason: String)
    }

    public let port: Int
    private let process: ChildProcess
    /// The index and PEM files (TemporaryDirectory is not Sendable; its URL is).
    private let directoryURL: URL

    /// `http://127.0.0.1:PORT/`, for a certificate's authorityInfoAccess.
    public var url: String { "http://127.0.0.1:\(port)/" }

    /// Starts a responder on `port` (nil: a free one) that signs with `signer` for
    /// certificates of `issuer`, every answer valid for `validMinutes` (nextUpdate).
    public init(
        issuer: X509Certificate, signer: X509Certificate, signerKey: ECPrivateKey, entries: [Entry], validMinutes: Int = 60,
        port: Int? = nil
    ) async throws {
        let directory = try Self.responderFiles(issuer: issuer, signer: signer, signerKey: signerKey, entries: entries)
        var lastError = ""
        for _ in 0..<3 {
            let port = try port ?? freeLocalPort()
            let process = try ChildProcess(
                ChildProcess.env, Self.arguments(directory, validMinutes: validMinutes) + ["-port", String(port)], stdin: false)
            // openssl says it waits for connections a moment before it listens (on a loaded
            // machine long enough for a first request to be refused): the socket is checked too,
            // in the kernel's table, without a connection the responder would count.
            let ready = await process.waitUntil(timeout: .seconds(10)) {
                (process.stderrText.contains("waiting for OCSP client connections") && Self.isListening(port: port)) || !process.isRunning
            }
            if ready && process.isRunning {
                self.port = port
                self.process = process
                self.directoryURL = directory.url
                return
            }
            lastError = process.stderrTail()
            process.stop()
        }
        directory.remove()
        throw ResponderError(description: "openssl ocsp did not start: \(lastError)")
    }

    deinit { stop() }

    /// Requests that reached the responder so far.
    public var requestCount: Int {
        process.stderrText.components(separatedBy: "Received request").count - 1
    }

    /// The requests counted once `expected` arrived (or 5 s passed) and 100 ms more brought no
    /// other: the server logs each on its stderr, which reaches this process a moment after the
    /// answer reached the client, so an immediate read could miss the last one.
    public func settledRequestCount(expecting expected: Int) async -> Int {
        _ = await process.waitUntil(timeout: .seconds(5)) { requestCount >= expected }
        try? await Task.sleep(for: .milliseconds(100))
        return requestCount
    }

    /// Waits until `count` requests reached the responder; whether they did within `timeout`.
    public func waitForRequests(_ count: Int, timeout: Duration) async -> Bool {
        await process.waitUntil(timeout: timeout) { requestCount >= count }
    }

    /// Kills the responder and removes its files (again: nothing).
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directoryURL)
    }

    /// The DER response `openssl ocsp` gives to `request` (no network: `-reqin`/`-respout`),
    /// for tests of the OpenSSL wrappers.
    public static func respond(
        to request: OCSPRequest, issuer: X509Certificate, signer: X509Certificate, signerKey: ECPrivateKey, entries: [Entry],
        validMinutes: Int = 60
    ) throws -> [UInt8] {
        let directory = try responderFiles(issuer: issuer, signer: signer, signerKey: signerKey, entries: entries)
        defer { directory.remove() }
        try Data(request.derEncoded).write(to: URL(fileURLWithPath: directory.path("request.der")))
        let result = try SignetProcess.run(
            executable: ChildProcess.env,
            arguments(directory, validMinutes: validMinutes) + ["-reqin", directory.path("request.der"), "-respout", directory.path("response.der")],
            timeout: 30)
        guard result.exitCode == 0 else { throw ResponderError(description: "openssl ocsp failed: \(result.stderr)") }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.path("response.der"))))
    }

    private static func responderFiles(
        issuer: X509Certificate, signer: X509Certificate, signerKey: ECPrivateKey, entries: [Entry]
    ) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "signet-ocsp")
        try directory.write("index.txt", entries.map(indexLine).joined())
        try directory.write("ca.pem", issuer.pemEncoded)
        try directory.write("signer.pem", signer.pemEncoded)
        try directory.write("signer.key", signerKey.pemEncoded)
        return directory
    }

    /// Whether a TCP socket listens on `port` (IPv4 or IPv6), from /proc/net/tcp{,6}.
    static func isListening(port: Int) -> Bool {
        let hex = String(format: ":%04X", port)
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                // local_address is "ADDR:PORT" in hex; state 0A is LISTEN.
                if fields.count > 3, fields[1].hasSuffix(hex), fields[3] == "0A" { return true }
            }
        }
        return false
    }

    private static func arguments(_ directory: TemporaryDirectory, validMinutes: Int) -> [String] {
        ["openssl", "ocsp", "-index", directory.path("index.txt"), "-rsigner", directory.path("signer.pem"),
         "-rkey", directory.path("signer.key"), "-CA", directory.path("ca.pem"), "-nmin", String(validMinutes)]
    }

    /// `status \t expiry \t revocation[,reason] \t serial \t file \t subject`, serial in
    /// upper-case hex of even length as OpenSSL looks it up.
    static func indexLine(_ entry: Entry) -> String {
        let expiry = "450101000000Z"
        switch entry {
        case .valid(let certificate):
            return "V\t\(expiry)\t\t\(serial(certificate))\tunknown\t/CN=test\n"
        case .revoked(let certificate, let date, let reason):
            let revocation = reason.isEmpty ? asn1Time(date) : "\(asn1Time(date)),\(reason)"
            return "R\t\(expiry)\t\(revocation)\t\(serial(certificate))\tunknown\t/CN=test\n"
        }
    }

    private static func serial(_ certificate: X509Certificate) -> String {
        let hex = certificate.serialNumberHex.uppercased()
        return hex.count % 2 == 0 ? hex : "0" + hex
    }

    /// YYMMDDHHMMSSZ (UTCTime), what the index holds.
    private static func asn1Time(_ date: Date) -> String { utcTimestamp(date, format: "yyMMddHHmmss'Z'") }

    /// `date` in UTC in a DateFormatter `format`, for openssl's command lines and files.
    static func utcTimestamp(_ date: Date, format: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = format
        return formatter.string(from: date)
    }

    public struct ResponderError: Error, CustomStringConvertible {
        public var description: String
    }
}
