import AppStoreModels
import Foundation
import Testing

/// Malformed and hostile input must throw ``AppStoreJSONError``, never crash or hang.
@Suite struct HostileJSONTests {
    private func decodeError(_ json: [UInt8]) -> AppStoreJSONError? {
        do {
            _ = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: json)
            return nil
        } catch let error as AppStoreJSONError {
            return error
        } catch {
            Issue.record("unexpected error type \(error)")
            return nil
        }
    }

    private func decodeError(_ json: String) -> AppStoreJSONError? { decodeError(Array(json.utf8)) }

    @Test func missingFieldsAreAbsentNotErrors() throws {
        let empty = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Array("{}".utf8))
        #expect(empty == ResponseBodyV2DecodedPayload())
        let nulls = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self,
                                            from: Array(#"{"transactionId":null,"price":null,"isUpgraded":null,"advancedCommerceInfo":null}"#.utf8))
        #expect(nulls == JWSTransactionDecodedPayload())
        let sparse = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Array(#" {"data":{}} "#.utf8))
        #expect(sparse.data == NotificationData())
        #expect(sparse.notificationType == nil)
    }

    @Test func unknownKeysOfAnyShapeAreSkipped() throws {
        let json = #"""
        {"zzz":{"a":[1,2,{"b":null}],"c":"x\u00e9\"y"},"notificationType":"TEST","arr":[[],{}],"n":-1.5e-3,
         "t":true,"f":false,"ü":"ünïcode","esc\u0061ped":1,"notificationUUID":"u"}
        """#
        let n = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Array(json.utf8))
        #expect(n.notificationType == .test)
        #expect(n.notificationUUID == "u")
    }

    @Test func escapedKeysAndStrings() throws {
        let json = #"{"notification\u0054ype":"T\u0045ST","notificationUUID":"a\/b\\c\"d\n\t\u00e9\ud83d\ude00"}"#
        let n = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Array(json.utf8))
        #expect(n.notificationType == .test)
        #expect(n.notificationUUID == "a/b\\c\"d\n\té😀")
        #expect(try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(json.utf8)) == n)
    }

    @Test func deepNestingThrowsInsteadOfOverflowing() {
        let depth = 100_000
        let arrays = Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth)
        // Top-level array: wrong type at once.
        #expect(decodeError(arrays)?.kind == .typeMismatch)
        // Inside an unknown key it has to be skipped, which must stop at the depth cap.
        let nested = Array(#"{"x":"#.utf8) + arrays + Array("}".utf8)
        #expect(decodeError(nested)?.kind == .tooDeep)
        let objects = Array(String(repeating: #"{"a":"#, count: depth).utf8)
        #expect(decodeError(Array(#"{"x":"#.utf8) + objects)?.kind == .tooDeep)
        // Just under the cap is fine.
        let ok = Array(#"{"x":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: 60) + Array(repeating: UInt8(ascii: "]"), count: 60) + Array("}".utf8)
        #expect(decodeError(ok) == nil)
    }

    @Test func invalidUTF8Throws() {
        let cases: [[UInt8]] = [
            Array(#"{"notificationUUID":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
            Array(#"{"notificationUUID":""#.utf8) + [0xC3] + Array(#""}"#.utf8),            // truncated sequence
            Array(#"{"notificationUUID":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8),      // overlong
            Array(#"{"notificationUUID":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),  // surrogate
            Array(#"{"unknown":""#.utf8) + [0xF5, 0x80, 0x80, 0x80] + Array(#""}"#.utf8),   // > U+10FFFF, skipped key
            Array(#"{""#.utf8) + [0xFE] + Array(#"":1}"#.utf8),                              // in a key
            Array(#"{"notificationUUID":"\ud800"}"#.utf8),                                   // lone surrogate escape
            Array(#"{"notificationUUID":"\udc00\ud800"}"#.utf8),
            Array(#"{"notificationUUID":"\u12"}"#.utf8),
            Array(#"{"notificationUUID":"\x"}"#.utf8),
            Array(#"{"notificationUUID":"a"#.utf8) + [0x0A] + Array(#""}"#.utf8),          // raw control char
        ]
        for json in cases {
            let error = decodeError(json)
            #expect(error != nil, "\(json)")
            #expect(error?.kind == .invalidString || error?.kind == .unexpectedEnd, "\(json) gave \(String(describing: error))")
        }
        // Valid multi-byte UTF-8 passes.
        #expect(decodeError(Array(#"{"notificationUUID":"é中😀"}"#.utf8)) == nil)
    }

    @Test func numbersAreCheckedNotTrapped() throws {
        let cases: [(String, AppStoreJSONError.Kind)] = [
            (#"{"data":{"appAppleId":9223372036854775808}}"#, .numberOutOfRange),
            (#"{"data":{"appAppleId":-9223372036854775809}}"#, .numberOutOfRange),
            (#"{"data":{"appAppleId":99999999999999999999999999999999}}"#, .numberOutOfRange),
            (#"{"data":{"appAppleId":1.5}}"#, .numberOutOfRange),
            (#"{"data":{"appAppleId":1e3}}"#, .numberOutOfRange),
            (#"{"data":{"appAppleId":01}}"#, .unexpectedByte),
            (#"{"data":{"appAppleId":-}}"#, .invalidNumber),
            (#"{"data":{"appAppleId":1.}}"#, .invalidNumber),
            (#"{"data":{"appAppleId":1e}}"#, .invalidNumber),
            (#"{"data":{"appAppleId":+1}}"#, .unexpectedByte),
            (#"{"data":{"status":"1"}}"#, .typeMismatch),
            (#"{"data":{"appAppleId":"41234"}}"#, .typeMismatch),
        ]
        for (json, kind) in cases {
            #expect(decodeError(json)?.kind == kind, "\(json)")
        }
        #expect(try AppStoreJSON.decode(NotificationData.self, from: Array(#"{"appAppleId":-9223372036854775808}"#.utf8)).appAppleId == Int64.min)
    }

    @Test func syntaxErrorsThrow() {
        let cases: [(String, AppStoreJSONError.Kind)] = [
            ("", .unexpectedEnd),
            ("   ", .unexpectedEnd),
            ("[]", .typeMismatch),
            ("\"x\"", .typeMismatch),
            ("nul", .typeMismatch),
            (#"{"version":"2.0"} x"#, .trailingData),
            (#"{"version":"2.0"}{}"#, .trailingData),
            (#"{"version":"2.0",}"#, .unexpectedByte),
            (#"{"version" "2.0"}"#, .unexpectedByte),
            (#"{"version":}"#, .unexpectedByte),
            (#"{version:"2.0"}"#, .unexpectedByte),
            (#"{"x":[1,]}"#, .unexpectedByte),
            (#"{"x":[1 2]}"#, .unexpectedByte),
            (#"{"x":tru}"#, .unexpectedByte),
            (#"{"summary":{"storefrontCountryCodes":["USA",null]}}"#, .typeMismatch),
            (#"{"summary":{"storefrontCountryCodes":"USA"}}"#, .typeMismatch),
            (#"{"data":{"status":true}}"#, .typeMismatch),
            (#"{"data":[]}"#, .typeMismatch),
            ("{'version':'2.0'}", .unexpectedByte),
        ]
        for (json, kind) in cases {
            #expect(decodeError(json)?.kind == kind, "\(json.debugDescription)")
        }
    }

    @Test func everyTruncationOfRealPayloadsThrows() throws {
        for name in ["signedTransaction.json", "signedRenewalInfo.json", "signedNotification.json", "signedSummaryNotification.json"] {
            let bytes = try Fixtures.payload(name)
            // The last byte before the trailing whitespace closes the top-level object.
            let closing = bytes.lastIndex(of: UInt8(ascii: "}"))!
            for length in 0..<closing {
                let prefix = Array(bytes[..<length])
                #expect(throws: AppStoreJSONError.self, "\(name) cut at \(length)") {
                    if name.hasPrefix("signedTransaction") {
                        _ = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: prefix)
                    } else if name.hasPrefix("signedRenewal") {
                        _ = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: prefix)
                    } else {
                        _ = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: prefix)
                    }
                }
            }
        }
    }

    /// Random corruption must only ever produce a value or an `AppStoreJSONError`.
    @Test func randomMutationsNeverCrash() throws {
        var rng = TestRNG(seed: 0x5EED)
        let sources = try ["signedTransaction.json", "signedRenewalInfo.json", "signedNotification.json"].map(Fixtures.payload)
        let alphabet = Array(#"{}[]",:\0123456789.eE+-tfnu "#.utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xFF]
        for round in 0..<6000 {
            var bytes = sources[round % sources.count]
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let index = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0: bytes[index] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: index)
                default: bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: index)
                }
            }
            do {
                _ = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: bytes)
                _ = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: bytes)
                _ = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: bytes)
            } catch is AppStoreJSONError {
                continue
            }
        }
    }

    @Test func nonFastTypesUseFoundation() throws {
        struct Other: Decodable, Equatable { let a: Int }
        #expect(try AppStoreJSON.decode(Other.self, from: Array(#"{"a":1}"#.utf8)) == Other(a: 1))
        #expect(throws: AppStoreJSONError.self) { try AppStoreJSON.decode(Other.self, from: Array(#"{"a":"x"}"#.utf8)) }
        #expect(try AppStoreJSON.decode(AppleTimestamp.self, from: Array("12".utf8)).millisecondsSince1970 == 12)
    }

    @Test func nonContiguousInputWorks() throws {
        let bytes = try Fixtures.payload("signedNotification.json")
        let n = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: bytes.lazy.map { $0 })
        #expect(n.notificationType == .subscribed)
    }
}

/// SplitMix64, so failures reproduce.
struct TestRNG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
