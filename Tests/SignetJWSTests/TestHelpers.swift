import Foundation
import SignetCore
import SignetJWS
import SignetOpenSSL
import SignetTestSupport
import Testing

/// Shared helpers for the SignetJWS tests.
enum Fixture {
    /// A fixed clock for vectors without signedDate: 2026-01-01T00:00:00Z, inside the
    /// Apple library test chains' validity (2023-01-05 … 2033-01-01).
    static let fixedNow = Date(timeIntervalSince1970: 1_767_225_600)

    static func bytes(_ url: URL) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: url))
    }

    static func text(_ url: URL) throws -> String {
        String(decoding: try bytes(url), as: UTF8.self)
    }

    /// A file from the Apple library vectors folder, e.g. "mock_signed_data/testNotification".
    static func vector(_ path: String) throws -> String {
        try text(FixturePaths.appleLibraryVectors.appendingPathComponent(path))
    }

    static func vectorCertificate(_ path: String) throws -> X509Certificate {
        try X509Certificate(derEncoded: bytes(FixturePaths.appleLibraryVectors.appendingPathComponent(path)))
    }

    /// The Apple library's test root (certs/testCA.der).
    static func testCA() throws -> X509Certificate { try vectorCertificate("certs/testCA.der") }

    /// The values of `field` in every line of an NDJSON file, in order.
    static func ndjson(_ name: String, field: String) throws -> [String] {
        let text = try text(FixturePaths.appleReal.appendingPathComponent(name))
        return try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard let value = object?[field] as? String else { throw FixtureError("no \(field) in \(name)") }
            return value
        }
    }

    static func manifest() throws -> [String: [[String: Any]]] {
        let data = try Data(contentsOf: FixturePaths.appleReal.appendingPathComponent("manifest.json"))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: [[String: Any]]] else {
            throw FixtureError("manifest.json has an unexpected shape")
        }
        return object
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`, expects it to throw a `RecordRejection` with `reason`, returns the rejection.
@discardableResult
func expectRejection<T>(
    _ reason: ReasonCode, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T
) -> RecordRejection? {
    do {
        _ = try body()
        Issue.record("expected rejection \(reason), but it verified. \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
        return nil
    } catch let error as RecordRejection {
        #expect(error.reason == reason, "\(comment.map { "\($0) — " } ?? "")detail: \(error.detail)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected RecordRejection \(reason), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Builds a verifier or fails the test.
func makeVerifier(_ configuration: VerifierConfiguration, sourceLocation: SourceLocation = #_sourceLocation) throws -> AppStoreVerifier {
    do {
        return try AppStoreVerifier(configuration: configuration)
    } catch {
        Issue.record("verifier configuration rejected: \(error)", sourceLocation: sourceLocation)
        throw error
    }
}

/// Replaces the payload segment of a compact JWS (header and signature untouched).
func replacingPayload(of jws: String, with payload: [UInt8]) -> String {
    let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
    return parts[0] + "." + Base64.encodeURL(payload) + "." + parts[2]
}

/// The three segments of a compact JWS.
func segments(_ jws: String) -> [String] {
    jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
}
