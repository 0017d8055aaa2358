import Foundation

/// Locates the in-repository fixtures from this source file: the package root is two folders up,
/// and fixtures live at `<root>/Tests/Fixtures`.
enum Fixtures {
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // AppStoreModelsTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("Tests/Fixtures")

    static func bytes(_ relativePath: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(relativePath)))
    }

    static func payload(_ name: String) throws -> [UInt8] {
        try bytes("apple-library-vectors/payloads/\(name)")
    }

    /// The lines of an NDJSON file, each decoded as a `[String: String]` object, and the single
    /// value it holds under `key`.
    static func ndjsonValues(_ relativePath: String, key: String) throws -> [String] {
        let text = String(decoding: try bytes(relativePath), as: UTF8.self)
        return try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard let value = object?[key] as? String else { throw FixtureError.missingKey(key) }
            return value
        }
    }

    static func manifest() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(bytes("apple-real/manifest.json"))) as! [String: Any]
    }

    /// The payload (middle segment) of a compact JWS, base64url-decoded. No signature check.
    static func jwsPayload(_ jws: String) throws -> [UInt8] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw FixtureError.notJWS }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { throw FixtureError.notJWS }
        return Array(data)
    }

    enum FixtureError: Error {
        case missingKey(String)
        case notJWS
    }
}
