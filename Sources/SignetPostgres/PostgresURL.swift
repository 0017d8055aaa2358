import Foundation

/// A `postgres://user:password@host:port/database?sslmode=...` URL, parsed.
///
/// The password is kept for connecting only: ``redacted`` (used in every message and in
/// `description`) replaces it, so it never reaches a log.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// libpq's `sslmode` values that Signet honours.
    public enum SSLMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, plain otherwise (libpq's default).
        case prefer
        /// TLS required, certificate not verified (libpq's `require`).
        case require
        /// TLS required and the certificate chain verified against the system roots.
        case verifyCA = "verify-ca"
        /// As verify-ca, and the host name checked too.
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    public var sslMode: SSLMode

    /// Parses `text`; the error never contains the password.
    public init(_ text: String) throws(PostgresStoreError) {
        guard let components = URLComponents(string: text),
              components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw PostgresStoreError("the database url must look like postgres://user:password@host:5432/database?sslmode=disable")
        }
        host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1"
        guard (components.port ?? 5432) > 0, (components.port ?? 5432) < 65536 else {
            throw PostgresStoreError("the database url's port is out of range")
        }
        port = components.port ?? 5432
        user = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        password = components.password.flatMap { $0.removingPercentEncoding }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? user : (path.removingPercentEncoding ?? path)
        let mode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? SSLMode.prefer.rawValue
        guard let sslMode = SSLMode(rawValue: mode) else {
            throw PostgresStoreError(
                "unknown sslmode '\(mode)'; expected one of: \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.sslMode = sslMode
    }

    /// postgres://postgres@127.0.0.1:5432/postgres, no TLS (defaults in docs).
    static let localDefault: PostgresURL = {
        PostgresURL(host: "127.0.0.1", port: 5432, user: "postgres", password: nil, database: "postgres", sslMode: .disable)
    }()

    private init(host: String, port: Int, user: String, password: String?, database: String, sslMode: SSLMode) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.sslMode = sslMode
    }

    /// The URL with the password replaced by `***`.
    public var redacted: String {
        let credentials = password == nil ? user : user + ":***"
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=\(sslMode.rawValue)"
    }

    public var description: String { redacted }
    public var debugDescription: String { redacted }
}
