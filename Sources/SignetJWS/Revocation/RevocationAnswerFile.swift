import Foundation

/// The good OCSP answers `soft` mode's grace counts from, kept on disk so that a restart
/// during a responder outage keeps the grace instead of holding every record at once.
///
/// Each entry is the responder's signed answer as received (DER) with when it was fetched;
/// nothing read back is believed until it is verified again against the certificate's issuer
/// (``OCSPRevocationChecker/lastGoodNextUpdate(of:issuer:)``), so a tampered or foreign file
/// can only lose the grace, never grant one. At most ``capacity`` entries, the newest kept; the
/// file is replaced whole (written beside it, then renamed), so a crash leaves the old one.
struct RevocationAnswerFile: Sendable {
    /// One kept answer.
    struct Entry: Codable, Sendable {
        /// SHA-256 of the issuer's certificate, hex.
        var issuer: String
        /// The certificate's serial number, hex.
        var serial: String
        /// When it was fetched (seconds since 1970): the instant it is verified at again.
        var fetchedAt: Int64
        /// The OCSP response, base64 DER.
        var response: String
    }

    static let capacity = 1_000

    let path: String

    /// The entries on disk; none when the file is missing or unreadable (said by the caller).
    func load() throws -> [Entry] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        return try JSONDecoder().decode([Entry].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Replaces the file with `entries`, the newest ``capacity`` of them.
    func save(_ entries: [Entry]) throws {
        let kept = entries.sorted { $0.fetchedAt > $1.fetchedAt }.prefix(Self.capacity)
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(Array(kept)).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
