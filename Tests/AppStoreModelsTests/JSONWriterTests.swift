import AppStoreModels
import Foundation
import Testing

@Suite struct JSONWriterTests {
    @Test func writesValidJSONWithAutomaticSeparators() throws {
        var w = JSONWriter()
        w.objectStart()
        w.field("s", "plain")
        w.field("i", Int64(-9_223_372_036_854_775_808))
        w.field("z", 0)
        w.field("b", true)
        w.field("missing", nil as String?)
        w.key("n"); w.null()
        w.key("a"); w.arrayStart(); w.int(1); w.string("two"); w.bool(false); w.arrayStart(); w.arrayEnd(); w.objectStart(); w.objectEnd(); w.arrayEnd()
        w.field("list", ["x", "y"])
        w.field("t", AppleTimestamp(millisecondsSince1970: 1_698_148_900_000))
        w.key("raw"); w.raw(Array(#"{"k":1}"#.utf8))
        w.objectEnd()
        let text = String(decoding: w.bytes, as: UTF8.self)
        #expect(text == #"{"s":"plain","i":-9223372036854775808,"z":0,"b":true,"n":null,"a":[1,"two",false,[],{}],"list":["x","y"],"t":1698148900000,"raw":{"k":1}}"#)
        #expect(try JSONSerialization.jsonObject(with: Data(w.bytes)) is [String: Any])
    }

    @Test func escapesEverythingThatNeedsIt() throws {
        var controls = ""
        for scalar in 0..<0x20 { controls.unicodeScalars.append(Unicode.Scalar(UInt8(scalar))) }
        let tricky = "quote\" backslash\\ slash/ \(controls) é中😀 \u{2028}\u{7F}"
        var w = JSONWriter()
        w.objectStart()
        w.field("k\"ey\n", tricky)
        w.objectEnd()
        let text = String(decoding: w.bytes, as: UTF8.self)
        #expect(text.contains(#"\u0000"#))
        #expect(text.contains(#"\u001f"#))
        #expect(text.contains(#"\n"#))
        #expect(text.contains(#"\""#))
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(w.bytes)) as? [String: String])
        #expect(decoded == ["k\"ey\n": tricky])
        // And through our own reader.
        var n = JSONWriter()
        n.objectStart(); n.field("notificationUUID", tricky); n.objectEnd()
        #expect(try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: n.bytes).notificationUUID == tricky)
    }

    @Test func resetReusesTheBuffer() {
        var w = JSONWriter(capacity: 16)
        w.arrayStart(); w.int(1); w.arrayEnd()
        w.reset()
        w.arrayStart(); w.int(2); w.arrayEnd()
        #expect(String(decoding: w.bytes, as: UTF8.self) == "[2]")
    }
}
