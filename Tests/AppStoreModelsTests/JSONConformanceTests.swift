import AppStoreModels
import Foundation
import Testing

/// Signet's reader against nst/JSONTestSuite: every `y_` case accepted, every `n_` case
/// rejected (with ``AppStoreJSONError``, never a crash), and each `i_` case handled as
/// docs/json.md states.
@Suite("JSONTestSuite conformance")
struct JSONConformanceTests {
    private static func parse(_ bytes: [UInt8], _ duplicates: JSONElement.DuplicateKeys) -> Result<JSONElement, AppStoreJSONError> {
        do {
            return .success(try JSONElement.parse(bytes, duplicateKeys: duplicates))
        } catch let error as AppStoreJSONError {
            return .failure(error)
        } catch {
            Issue.record("not an AppStoreJSONError: \(error)")
            return .failure(AppStoreJSONError(.foundation, offset: -1, "\(error)"))
        }
    }

    @Test func theSuiteIsComplete() throws {
        // Upstream counts at the pinned commit; a lost file would silently weaken the tests.
        #expect(try JSONTestSuiteCase.all(.accept).count == 95)
        #expect(try JSONTestSuiteCase.all(.reject).count == 188)
        #expect(try JSONTestSuiteCase.all(.implementationDefined).count == 35)
    }

    @Test(arguments: try JSONTestSuiteCase.all(.accept))
    func acceptsEveryYCase(_ testCase: JSONTestSuiteCase) {
        if case .failure(let error) = Self.parse(testCase.bytes, .allow) {
            Issue.record("\(testCase.name) rejected: \(error)")
        }
    }

    /// Under `.reject` (what the envelope and the JWS header use) only the two cases that
    /// repeat a member name change outcome.
    @Test(arguments: try JSONTestSuiteCase.all(.accept))
    func duplicateNamesAreTheOnlyYCasesRejectedStrictly(_ testCase: JSONTestSuiteCase) {
        let repeatsAName = testCase.name.hasPrefix("y_object_duplicated_key")
        switch Self.parse(testCase.bytes, .reject) {
        case .success:
            #expect(!repeatsAName, "\(testCase.name) accepted despite a repeated name")
        case .failure(let error):
            #expect(repeatsAName && error.kind == .duplicateKey, "\(testCase.name): \(error)")
        }
    }

    @Test(arguments: try JSONTestSuiteCase.all(.reject))
    func rejectsEveryNCase(_ testCase: JSONTestSuiteCase) {
        if case .success(let value) = Self.parse(testCase.bytes, .allow) {
            Issue.record("\(testCase.name) accepted as \(value)")
        }
    }

    /// docs/json.md, "Implementation-defined cases": the class each `i_` case belongs to and
    /// what Signet does with it.
    enum IClass: String {
        /// Numbers beyond Int64/Double: accepted, kept as their literal text.
        case hugeNumber
        /// Non-UTF-8 text: a byte-order mark, UTF-16: rejected as `encoding`.
        case notUTF8
        /// Lone or inverted surrogate escapes and invalid UTF-8 bytes in strings: `invalidString`.
        case invalidString
        /// 500 nested arrays: deeper than the cap of 64, `tooDeep`.
        case tooDeep

        init(_ name: String) {
            if name.hasPrefix("i_number_") {
                self = .hugeNumber
            } else if name.contains("BOM") || name.lowercased().contains("utf16") || name.contains("UTF-16") {
                self = .notUTF8
            } else if name.hasPrefix("i_structure_500_nested") {
                self = .tooDeep
            } else {
                self = .invalidString
            }
        }
    }

    @Test(arguments: try JSONTestSuiteCase.all(.implementationDefined))
    func implementationDefinedCasesAreHandledAsDocumented(_ testCase: JSONTestSuiteCase) throws {
        let result = Self.parse(testCase.bytes, .allow)
        switch IClass(testCase.name) {
        case .hugeNumber:
            // Each file is `[<number>]`: the literal must come back unchanged, not rounded.
            let literal = String(decoding: testCase.bytes, as: UTF8.self)
                .trimmingCharacters(in: CharacterSet(charactersIn: "[] \n"))
            #expect(try result.get() == .array([.number(literal)]), "\(testCase.name)")
        case .notUTF8:
            #expect(throws: AppStoreJSONError.self) { try result.get() }
            if case .failure(let error) = result { #expect(error.kind == .encoding, "\(testCase.name): \(error)") }
        case .invalidString:
            if case .failure(let error) = result {
                #expect(error.kind == .invalidString, "\(testCase.name): \(error)")
            } else {
                Issue.record("\(testCase.name) accepted")
            }
        case .tooDeep:
            if case .failure(let error) = result {
                #expect(error.kind == .tooDeep, "\(testCase.name): \(error)")
            } else {
                Issue.record("\(testCase.name) accepted")
            }
        }
    }

    @Test func nestingUpToTheCapIsAcceptedAndOneMoreIsNot() throws {
        let cap = AppStoreJSON.maximumDepth
        func nested(_ depth: Int) -> [UInt8] {
            Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth)
        }
        #expect(throws: Never.self) { try JSONElement.parse(nested(cap)) }
        #expect(Self.parse(nested(cap + 1), .allow) == .failure(AppStoreJSONError(.tooDeep, offset: cap + 1, "nesting deeper than \(cap)")))
    }

    @Test func valuesAreDecodedNotJustValidated() throws {
        let text = #" {"a":[1,-0.5e+3,true,false,null],"b\u00e9":"x\ud83d\ude00\n","a":{}} "#
        let value = try JSONElement.parse(Array(text.utf8), duplicateKeys: .allow)
        #expect(value == .object([
            .init(key: "a", value: .array([.number("1"), .number("-0.5e+3"), .bool(true), .bool(false), .null])),
            .init(key: "bé", value: .string("x😀\n")),
            .init(key: "a", value: .object([])),
        ]))
        #expect(value["a"] == .array([.number("1"), .number("-0.5e+3"), .bool(true), .bool(false), .null]))
        #expect(value["bé"]?.stringValue == "x😀\n")
        #expect(value["zz"] == nil)
    }

    @Test func rejectionsSayWhereAndWhat() {
        let cases: [(String, AppStoreJSONError)] = [
            (#"{"a":1,}"#, AppStoreJSONError(.unexpectedByte, offset: 7, "expected a key")),
            ("[1,]", AppStoreJSONError(.unexpectedByte, offset: 3, "expected a value")),
            (#"{"a":1,"a":2}"#, AppStoreJSONError(.duplicateKey, offset: 7, #"the object names "a" twice"#)),
            ("\u{FEFF}{}", AppStoreJSONError(.encoding, offset: 0, "a UTF-8 byte-order mark; JSON text must not start with one (RFC 8259 §8.1)")),
            ("01", AppStoreJSONError(.trailingData, offset: 1)),
            ("[\"a\tb\"]", AppStoreJSONError(.invalidString, offset: 3, "control character in string")),
        ]
        for (text, expected) in cases {
            #expect(Self.parse(Array(text.utf8), .reject) == .failure(expected), "\(text)")
        }
        // UTF-16 in either byte order, as Foundation would auto-detect it.
        let utf16LE = Array("{}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let utf16BE = Array("{}".utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        #expect((try? Self.parse(utf16LE, .reject).get()) == nil)
        if case .failure(let error) = Self.parse(utf16LE, .reject) { #expect(error.kind == .encoding && error.offset == 1) }
        if case .failure(let error) = Self.parse(utf16BE, .reject) { #expect(error.kind == .encoding && error.offset == 0) }
    }
}
