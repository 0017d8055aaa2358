import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import Testing

/// Issue 12 §2 end to end through the `decode` and `verify` stages: an envelope line or a JWS
/// header that is not RFC 8259 JSON is rejected (`malformed_json` / `malformed_jws`), even when
/// everything else about the line is genuine and correctly signed.
@Suite("Strict JSON in the envelope and the JWS header")
struct StrictJSONInputTests {
    /// A genuine notification signed by the test PKI the verifier trusts.
    static let jws: String = {
        do { return try AdversarialTests.signed(AdversarialTests.notificationJSON()) } catch { fatalError("signing: \(error)") }
    }()

    /// Runs one raw line through `decode` then `verify`, as a pipeline does.
    private static func run(_ line: [UInt8], _ mode: AdversarialTests.CacheMode) throws -> Record {
        let verifier = try AdversarialTests.verifier(mode)
        var record = Record(raw: line, position: SourcePosition(stream: "test", offset: 0))
        try DecodeStage().process(record: &record)
        try VerifyStage(verifier: verifier, parallelism: 1).process(record: &record)
        return record
    }

    private static func utf16(_ text: String, bigEndian: Bool) -> [UInt8] {
        Array(text.utf16).flatMap { bigEndian ? [UInt8($0 >> 8), UInt8($0 & 0xFF)] : [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    }

    // MARK: envelope

    @Test("valid envelopes off the fast path still verify", arguments: AdversarialTests.CacheMode.allCases)
    func validEnvelopes(mode: AdversarialTests.CacheMode) throws {
        for line in [
            #"{ "signedPayload" : "\#(Self.jws)" }"#,
            #"{"note":[1,-2.5e3,{"a":null},true],"signedPayload":"\#(Self.jws)"}"#,
            #"{"signedPayload":"\#(Self.jws)","signedTransaction":null}"#,
        ] {
            let record = try Self.run(Array(line.utf8), mode)
            #expect(record[VerifiedPayloadPart.self] != nil, "\(line.prefix(40))")
        }
    }

    @Test("an envelope that is not RFC 8259 JSON → malformed_json", arguments: AdversarialTests.CacheMode.allCases)
    func malformedEnvelopes(mode: AdversarialTests.CacheMode) throws {
        let good = #"{"signedPayload":"\#(Self.jws)"}"#
        let cases: [(String, [UInt8], String)] = [
            ("trailing comma", Array(#"{"signedPayload":"\#(Self.jws)",}"#.utf8), "expected a key"),
            ("trailing comma in an array", Array(#"{"signedPayload":"\#(Self.jws)","x":[1,]}"#.utf8), "expected a value"),
            ("raw control character", Array(#"{"signedPayload":"\#(Self.jws)","note":"a"#.utf8) + [0x09] + Array(#"b"}"#.utf8), "control character"),
            ("raw control character in the JWS", Array(#"{"signedPayload":"\#(Self.jws)"#.utf8) + [0x0A] + Array(#""}"#.utf8), "control character"),
            ("UTF-8 byte-order mark", [0xEF, 0xBB, 0xBF] + Array(good.utf8), "byte-order mark"),
            ("UTF-16LE", Self.utf16(good, bigEndian: false), "UTF-16"),
            ("UTF-16BE", Self.utf16(good, bigEndian: true), "UTF-16"),
            ("comment", Array(#"{"signedPayload":"\#(Self.jws)"/* c */}"#.utf8), "expected ',' or '}'"),
            ("NaN", Array(#"{"signedPayload":"\#(Self.jws)","n":NaN}"#.utf8), "expected a value"),
            ("leading zero", Array(#"{"signedPayload":"\#(Self.jws)","n":012}"#.utf8), "expected ',' or '}'"),
            ("duplicate signedPayload", Array(#"{"signedPayload":"a.b.c","signedPayload":"\#(Self.jws)"}"#.utf8), "twice"),
            ("data after the object", Array(#"{"signedPayload":"\#(Self.jws)"} {}"#.utf8), "trailingData"),
            ("signedPayload not a string", Array(#"{"signedPayload":["\#(Self.jws)"]}"#.utf8), "not a string"),
            ("JSON but not an object", Array(#"["\#(Self.jws)"]"#.utf8), "not an object"),
        ]
        for (name, line, detail) in cases {
            let rejection = expectRejection(.malformedJSON, "\(name)") { try Self.run(line, mode) }
            #expect(rejection?.detail.contains(detail) == true, "\(name): \(rejection?.detail ?? "")")
        }
        // UTF-16 with its byte-order mark is not even UTF-8: the earlier check names that.
        expectRejection(.invalidUTF8, "UTF-16LE with BOM") { try Self.run([0xFF, 0xFE] + Self.utf16(good, bigEndian: false), mode) }
    }

    // MARK: JWS header

    /// The PKI's own header bytes, edited; the JWS is then properly signed over the edited header.
    private static func jws(header edit: (String) -> [UInt8]) throws -> String {
        try AdversarialTests.signed(AdversarialTests.notificationJSON()) { signer in
            signer.headerOverride = edit(String(decoding: signer.headerJSON, as: UTF8.self))
        }
    }

    @Test("a header with unknown members still verifies", arguments: AdversarialTests.CacheMode.allCases)
    func validHeader(mode: AdversarialTests.CacheMode) throws {
        let jws = try Self.jws { Array(("{\"typ\":\"JWT\",\"kid\":null," + $0.dropFirst()).utf8) }
        let record = try Self.run(Array(#"{"signedPayload":"\#(jws)"}"#.utf8), mode)
        #expect(record[VerifiedPayloadPart.self] != nil)
    }

    @Test("a header that is not RFC 8259 JSON → malformed_jws", arguments: AdversarialTests.CacheMode.allCases)
    func malformedHeaders(mode: AdversarialTests.CacheMode) throws {
        let cases: [(String, (String) -> [UInt8], String)] = [
            ("UTF-16LE", { Self.utf16($0, bigEndian: false) }, "UTF-16"),
            ("UTF-16BE", { Self.utf16($0, bigEndian: true) }, "UTF-16"),
            ("UTF-8 byte-order mark", { [0xEF, 0xBB, 0xBF] + Array($0.utf8) }, "byte-order mark"),
            ("trailing comma", { Array(($0.dropLast() + ",}").utf8) }, "expected a key"),
            ("trailing comma in x5c", { Array($0.replacingOccurrences(of: "\"]}", with: "\",]}").utf8) }, "expected a value"),
            ("raw control character", { Array(($0.dropLast() + ",\"kid\":\"a\u{09}b\"}").utf8) }, "control character"),
            ("duplicate alg, forged first", { Array(("{\"alg\":\"none\"," + $0.dropFirst()).utf8) }, "\"alg\" twice"),
            ("duplicate alg, same value", { Array(("{\"alg\":\"ES256\"," + $0.dropFirst()).utf8) }, "\"alg\" twice"),
            ("comment", { Array(("/**/" + $0).utf8) }, "expected a value"),
        ]
        for (name, edit, detail) in cases {
            let jws = try Self.jws(header: edit)
            let rejection = expectRejection(.malformedJWS, "\(name)") { try Self.run(Array(#"{"signedPayload":"\#(jws)"}"#.utf8), mode) }
            #expect(rejection?.detail.contains(detail) == true, "\(name): \(rejection?.detail ?? "")")
            #expect(rejection?.detail.contains("JWS header") == true, "\(name): \(rejection?.detail ?? "")")
        }
    }

    @Test("a payload repeating a key it signs → malformed_jws", arguments: AdversarialTests.CacheMode.allCases)
    func duplicateKeyInPayload(mode: AdversarialTests.CacheMode) throws {
        // Two parsers keeping different duplicates would see different bundles.
        let json = AdversarialTests.notificationJSON().replacingOccurrences(of: #""bundleId":"#, with: #""bundleId":"com.attacker","bundleId":"#)
        let jws = try AdversarialTests.signed(json)
        let rejection = expectRejection(.malformedJWS) { try Self.run(Array(#"{"signedPayload":"\#(jws)"}"#.utf8), mode) }
        #expect(rejection?.detail.contains("duplicateKey") == true, "\(rejection?.detail ?? "")")
    }
}
