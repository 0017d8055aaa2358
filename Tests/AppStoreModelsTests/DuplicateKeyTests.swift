import AppStoreModels
import Foundation
import Testing

/// The payload models reject an object that names one of their keys twice (JSONDecoder
/// would keep the last one silently), and only then: the same key in different objects,
/// and repeated keys the model ignores, are fine. docs/json.md, "Duplicate names".
@Suite struct DuplicateKeyTests {
    private func kind<T: Decodable>(_ type: T.Type, _ json: String) -> AppStoreJSONError.Kind? {
        do {
            _ = try AppStoreJSON.decode(type, from: Array(json.utf8))
            return nil
        } catch let error as AppStoreJSONError {
            return error.kind
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func aRepeatedKnownKeyIsRejected() {
        let cases: [String] = [
            #"{"notificationType":"TEST","notificationType":"SUBSCRIBED"}"#,
            #"{"notificationType":null,"notificationType":"SUBSCRIBED"}"#,
            #"{"notificationUUID":"a","notification\u0055UID":"b"}"#,           // the same name, escaped
            #"{"data":{"bundleId":"a","appAppleId":1,"bundleId":"b"}}"#,        // in a nested model
        ]
        for json in cases {
            #expect(kind(ResponseBodyV2DecodedPayload.self, json) == .duplicateKey, "\(json)")
        }
        // The detail names the key and points at its second occurrence.
        let json = #"{"notificationUUID":"a", "notificationUUID":"b"}"#
        #expect(throws: AppStoreJSONError(.duplicateKey, offset: 25, #"the object names "notificationUUID" twice"#)) {
            try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Array(json.utf8))
        }
        let transaction = #"{"advancedCommerceInfo":{"items":[{"SKU":"a"},{"SKU":"b","price":1,"SKU":"c"}]}}"#
        #expect(kind(JWSTransactionDecodedPayload.self, transaction) == .duplicateKey)
        #expect(kind(JWSRenewalInfoDecodedPayload.self, #"{"autoRenewStatus":1,"autoRenewStatus":0}"#) == .duplicateKey)
    }

    @Test func theSameKeyInDifferentObjectsIsFine() throws {
        let json = #"{"data":{"bundleId":"a","environment":"Sandbox"},"summary":{"bundleId":"b","environment":"Sandbox"},"notificationUUID":"u"}"#
        let value = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Array(json.utf8))
        #expect(value.data?.bundleId == "a")
        #expect(value.summary?.bundleId == "b")
        // Sibling objects in an array each start with a clean slate.
        let items = #"{"advancedCommerceInfo":{"items":[{"SKU":"a","price":1},{"SKU":"b","price":2}]},"price":3}"#
        let transaction = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: Array(items.utf8))
        #expect(transaction.advancedCommerceInfo?.items?.map(\.sku) == ["a", "b"])
        #expect(transaction.price == 3)
    }

    @Test func repeatedUnknownKeysAreSkipped() throws {
        // They cannot change a decoded value, and tracking every name would cost the hot path.
        let json = #"{"vendorExtra":1,"vendorExtra":{"a":1,"a":2},"notificationUUID":"u"}"#
        let value = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Array(json.utf8))
        #expect(value.notificationUUID == "u")
    }

    @Test func payloadsInOtherEncodingsAreRejected() {
        #expect(kind(ResponseBodyV2DecodedPayload.self, "\u{FEFF}{}") == .encoding)
        let utf16 = Array(#"{"notificationUUID":"u"}"#.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        do {
            _ = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: utf16)
            Issue.record("UTF-16 accepted")
        } catch let error as AppStoreJSONError {
            #expect(error.kind == .encoding)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}
