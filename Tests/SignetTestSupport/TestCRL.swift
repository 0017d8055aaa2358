public import Foundation
public import SignetOpenSSL

/// Certificate revocation lists for tests, made by `openssl ca -gencrl` (an implementation
/// independent of the reader under test) from the same index lines as ``OCSPTestResponder``.
public enum TestCRL {
    /// A DER CRL `issuer` signs with `key`, listing the revoked ones of `entries`, issued at
    /// `lastUpdate` with the next one due at `nextUpdate`; `extensions` are CRL extension lines
    /// in OpenSSL's config syntax (`deltaCRL = critical,1`), `sections` any sections they name.
    public static func make(
        issuer: X509Certificate, key: ECPrivateKey, entries: [OCSPTestResponder.Entry] = [], lastUpdate: Date = Date(),
        nextUpdate: Date = Date().addingTimeInterval(3_600), extensions: [String] = [], sections: String = ""
    ) throws -> [UInt8] {
        let directory = try TemporaryDirectory(prefix: "signet-crl")
        defer { directory.remove() }
        try directory.write("index.txt", entries.map(OCSPTestResponder.indexLine).joined())
        try directory.write("ca.pem", issuer.pemEncoded)
        try directory.write("ca.key", key.pemEncoded)
        try directory.write(
            "ca.cnf",
            """
            [ca]
            default_ca = test_ca
            [test_ca]
            database = \(directory.path("index.txt"))
            default_md = sha256
            [crl_ext]
            \(extensions.joined(separator: "\n"))
            \(sections)

            """)
        var arguments = [
            "openssl", "ca", "-gencrl", "-batch", "-config", directory.path("ca.cnf"), "-keyfile", directory.path("ca.key"),
            "-cert", directory.path("ca.pem"), "-out", directory.path("crl.pem"),
            "-crl_lastupdate", generalizedTime(lastUpdate), "-crl_nextupdate", generalizedTime(nextUpdate),
        ]
        if !extensions.isEmpty { arguments += ["-crlexts", "crl_ext"] }
        let made = try SignetProcess.run(executable: ChildProcess.env, arguments, timeout: 30)
        guard made.exitCode == 0 else { throw OCSPTestResponder.ResponderError(description: "openssl ca -gencrl failed: \(made.stderr)") }
        let converted = try SignetProcess.run(
            executable: ChildProcess.env,
            ["openssl", "crl", "-in", directory.path("crl.pem"), "-outform", "DER", "-out", directory.path("crl.der")], timeout: 30)
        guard converted.exitCode == 0 else { throw OCSPTestResponder.ResponderError(description: "openssl crl failed: \(converted.stderr)") }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.path("crl.der"))))
    }

    /// YYYYMMDDHHMMSSZ, what `-crl_lastupdate` and `-crl_nextupdate` take.
    private static func generalizedTime(_ date: Date) -> String {
        OCSPTestResponder.utcTimestamp(date, format: "yyyyMMddHHmmss'Z'")
    }
}
