import Foundation
import SignetOpenSSL

/// What a credential may do in the console.
public enum ConsoleRole: String, Sendable, CaseIterable {
    /// Searches and reads customers, the audit log and the operations page.
    case readOnly = "read_only"
    /// Also acts: extends renewal dates, sets app account tokens, records consent, replays dead letters.
    case `operator`
}

/// One named credential: the token's SHA-256, never the token.
public struct ConsoleCredential: Sendable, Equatable {
    /// Who signs in with it: the audit log's actor.
    public var name: String
    public var role: ConsoleRole
    /// SHA-256 of the token.
    var digest: [UInt8]

    /// A credential for `token` (the http: section's API token when no file is given).
    public init(name: String, role: ConsoleRole, token: String) {
        self.init(name: name, role: role, digest: SHA256.hash(Array(token.utf8)))
    }

    init(name: String, role: ConsoleRole, digest: [UInt8]) {
        self.name = name
        self.role = role
        self.digest = digest
    }

    /// The line of a credentials file that names this credential.
    public var line: String { "\(name) \(role.rawValue) sha256:\(SHA256.hex(digest))" }
}

/// The console's credentials, from a file of `name role sha256:HEX` lines (`#` starts a
/// comment). Tokens are random and long (`signet console credential` makes them: 256 bits),
/// so one SHA-256 is what a file needs to keep them from a reader of the file; every stored
/// digest is compared, in constant time, on each sign-in.
public struct ConsoleCredentials: Sendable {
    public private(set) var credentials: [ConsoleCredential]

    /// A problem in the file, at its line.
    public struct Invalid: Error, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { line > 0 ? "line \(line): \(message)" : message }
    }

    public init(_ credentials: [ConsoleCredential]) {
        self.credentials = credentials
    }

    /// Reads `path`; throws ``Invalid`` naming the line of the first bad entry.
    public init(contentsOf path: String) throws(Invalid) {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw Invalid(line: 0, message: "cannot read \(path)")
        }
        try self.init(text: text)
    }

    /// Parses a file's text.
    public init(text: String) throws(Invalid) {
        var credentials: [ConsoleCredential] = []
        var names = Set<String>()
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if fields.isEmpty { continue }
            let number = index + 1
            guard fields.count == 3 else {
                throw Invalid(line: number, message: "expected `name role sha256:HEX`, found \(fields.count) field(s)")
            }
            let name = String(fields[0])
            guard Self.isValidName(name) else {
                throw Invalid(line: number, message: "name '\(name)' must be 1-64 letters, digits, '.', '_', '-' or '@'")
            }
            guard names.insert(name).inserted else { throw Invalid(line: number, message: "name '\(name)' appears twice") }
            guard let role = ConsoleRole(rawValue: String(fields[1])) else {
                throw Invalid(line: number, message: "role '\(fields[1])' is not read_only or operator")
            }
            guard fields[2].hasPrefix("sha256:"), let digest = SHA256.bytes(hex: fields[2].dropFirst(7)), digest.count == SHA256.byteCount else {
                throw Invalid(line: number, message: "the token's hash must be sha256: and 64 hex digits")
            }
            credentials.append(ConsoleCredential(name: name, role: role, digest: digest))
        }
        guard !credentials.isEmpty else { throw Invalid(line: 0, message: "no credential in the file") }
        self.init(credentials)
    }

    /// The credential `token` is, if any. Every digest is compared in full, so the time taken
    /// says nothing about which came close.
    public func credential(for token: String) -> ConsoleCredential? {
        let digest = SHA256.hash(Array(token.utf8))
        var found: ConsoleCredential?
        for credential in credentials where HMACSHA256.constantTimeEquals(credential.digest, digest) {
            found = credential
        }
        return token.isEmpty ? nil : found
    }

    /// A new random token (256 bits, base64url) for a credential named `name`.
    public static func newToken() -> String { "sgc_" + ConsoleSessions.randomToken() }

    static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "._-@".unicodeScalars.contains($0) }
    }
}
