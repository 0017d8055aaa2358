import Foundation
import Testing
import SignetTestSupport

@testable import SignetCore

@Suite("JSONText")
struct JSONTextTests {
    func parse(_ json: JSONText) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(json.bytes), options: [.fragmentsAllowed])
    }

    @Test func escapesQuotesBackslashesAndControlCharacters() throws {
        var controls = ""
        for value in 0..<0x20 { controls.unicodeScalars.append(Unicode.Scalar(UInt8(value))) }
        let tricky = "quote\" backslash\\ slash/ \(controls) end"
        var json = JSONText()
        json.beginObject()
        json.key(tricky); json.string(tricky)
        json.endObject()
        let text = String(decoding: json.bytes, as: UTF8.self)
        // No raw control character may appear in the output.
        #expect(!json.bytes.contains { $0 < 0x20 })
        #expect(text.contains("\\\""))
        #expect(text.contains("\\\\"))
        #expect(text.contains("\\n") && text.contains("\\r") && text.contains("\\t"))
        #expect(text.contains("\\u0000") && text.contains("\\u001f") && text.contains("\\u000b"))
        let object = try #require(try parse(json) as? [String: String])
        #expect(object == [tricky: tricky])
    }

    @Test func unicodePassesThroughAsUTF8() throws {
        let value = "é中😀 \u{2028} \u{7F} \u{FEFF}"
        var json = JSONText()
        json.string(value)
        #expect(json.bytes == Array("\"\(value)\"".utf8))
        #expect(try parse(json) as? String == value)
    }

    @Test func everyByteValueRoundTrips() throws {
        for scalar in (0..<0x80).compactMap(Unicode.Scalar.init) {
            var json = JSONText()
            json.beginArray(); json.string("a\(scalar)b"); json.endArray()
            let array = try #require(try parse(json) as? [String], "scalar \(scalar.value)")
            #expect(array == ["a\(scalar)b"], "scalar \(scalar.value)")
        }
    }

    @Test func separatorsAndNesting() throws {
        var json = JSONText()
        json.beginObject()
        json.key("s"); json.string("x")
        json.key("i"); json.int(Int64.min)
        json.key("b"); json.bool(false)
        json.key("n"); json.null()
        json.key("empty"); json.beginObject(); json.endObject()
        json.key("a"); json.beginArray()
        json.int(1); json.beginObject(); json.key("k"); json.bool(true); json.endObject(); json.beginArray(); json.endArray(); json.string("z")
        json.endArray()
        json.key("raw"); json.raw(Array(#"{"p":[1,2]}"#.utf8))
        json.field("present", "v")
        json.field("absent", nil as String?)
        json.field("count", Int64(3))
        json.field("none", nil as Int64?)
        json.field("flag", true)
        json.field("noflag", nil as Bool?)
        json.endObject()
        #expect(String(decoding: json.bytes, as: UTF8.self)
            == #"{"s":"x","i":-9223372036854775808,"b":false,"n":null,"empty":{},"a":[1,{"k":true},[],"z"],"raw":{"p":[1,2]},"present":"v","count":3,"flag":true}"#)
        let object = try #require(try parse(json) as? [String: Any])
        #expect(object.count == 10)
    }
}
