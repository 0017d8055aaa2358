import AppStoreModels
import Foundation
import Testing

/// The 29 real notifications Apple signed, their nested JWS and the standalone samples,
/// checked against manifest.json (signatures are not checked here).
@Suite struct RealNotificationTests {
    private static func string(_ value: Any?) -> String? { value as? String }
    private static func int64(_ value: Any?) -> Int64? { (value as? NSNumber)?.int64Value }

    @Test func notificationsMatchManifest() throws {
        let lines = try Fixtures.ndjsonValues("apple-real/notifications.ndjson", key: "signedPayload")
        let manifest = try #require(try Fixtures.manifest()["notifications"] as? [[String: Any]])
        #expect(lines.count == 29)
        #expect(manifest.count == lines.count)
        var nestedTransactions = 0
        var nestedRenewals = 0
        for (index, jws) in lines.enumerated() {
            let expected = manifest[index]
            #expect(expected["line"] as? Int == index + 1)
            let n = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: Fixtures.jwsPayload(jws))
            let line = "line \(index + 1)"
            #expect(n.notificationType?.rawValue == Self.string(expected["notificationType"]), "\(line)")
            #expect(n.notificationType?.isDocumented == true, "\(line)")
            #expect(n.subtype?.rawValue == Self.string(expected["subtype"]), "\(line)")
            #expect(n.notificationType.map { $0.documents(subtype: n.subtype) } == true, "\(line)")
            #expect(n.notificationUUID == Self.string(expected["notificationUUID"]), "\(line)")
            #expect(n.version == Self.string(expected["version"]), "\(line)")
            #expect(n.signedDate?.millisecondsSince1970 == Self.int64(expected["signedDate"]), "\(line)")
            let data = try #require(n.data, "\(line)")
            #expect(data.environment?.rawValue == Self.string(expected["environment"]), "\(line)")
            #expect(data.bundleId == Self.string(expected["bundleId"]), "\(line)")
            #expect(data.appAppleId == Self.int64(expected["appAppleId"]), "\(line)")
            #expect((data.signedTransactionInfo != nil) == (expected["has_signedTransactionInfo"] as? Bool), "\(line)")
            #expect((data.signedRenewalInfo != nil) == (expected["has_signedRenewalInfo"] as? Bool), "\(line)")
            #expect(try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(Fixtures.jwsPayload(jws))) == n)

            if let signed = data.signedTransactionInfo {
                nestedTransactions += 1
                let t = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: Fixtures.jwsPayload(signed))
                #expect(t.bundleId == data.bundleId, "\(line)")
                #expect(t.environment == data.environment, "\(line)")
                #expect(t.transactionId != nil && t.originalTransactionId != nil && t.productId != nil, "\(line)")
                #expect(t.type?.isDocumented == true, "\(line)")
                #expect(t.signedDate != nil, "\(line)")
                if n.notificationType == .refund {
                    #expect(t.revocationDate != nil, "\(line): a refunded transaction carries revocationDate")
                }
                if let signedRenewal = data.signedRenewalInfo {
                    nestedRenewals += 1
                    let r = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: Fixtures.jwsPayload(signedRenewal))
                    #expect(r.originalTransactionId == t.originalTransactionId, "\(line)")
                    #expect(r.environment == data.environment, "\(line)")
                    #expect(t.type == .autoRenewableSubscription, "\(line)")
                    if n.notificationType == .didChangeRenewalStatus, n.subtype == .autoRenewDisabled {
                        #expect(r.autoRenewStatus == .off, "\(line)")
                    }
                    if n.notificationType == .expired, n.subtype == .voluntary {
                        #expect(r.expirationIntent == .customerCancelled, "\(line)")
                        #expect(r.autoRenewStatus == .off, "\(line)")
                    }
                }
            }
        }
        #expect(nestedTransactions == 27)
        #expect(nestedRenewals == 22)
    }

    @Test func standaloneTransactionsMatchManifest() throws {
        let lines = try Fixtures.ndjsonValues("apple-real/transactions.ndjson", key: "signedTransactionInfo")
        let manifest = try #require(try Fixtures.manifest()["transactions"] as? [[String: Any]])
        #expect(lines.count == 31)
        #expect(manifest.count == lines.count)
        for (index, jws) in lines.enumerated() {
            let expected = manifest[index]
            let t = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: Fixtures.jwsPayload(jws))
            let line = "line \(index + 1)"
            #expect(t.environment?.rawValue == Self.string(expected["environment"]), "\(line)")
            #expect(t.bundleId == Self.string(expected["bundleId"]), "\(line)")
            #expect(t.productId == Self.string(expected["productId"]), "\(line)")
            #expect(t.type?.rawValue == Self.string(expected["type"]), "\(line)")
            #expect(t.signedDate?.millisecondsSince1970 == Self.int64(expected["signedDate"]), "\(line)")
            #expect(try JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(Fixtures.jwsPayload(jws))) == t)
        }
    }

    @Test func standaloneRenewalInfosMatchManifest() throws {
        let lines = try Fixtures.ndjsonValues("apple-real/renewal-infos.ndjson", key: "signedRenewalInfo")
        let manifest = try #require(try Fixtures.manifest()["renewal_infos"] as? [[String: Any]])
        #expect(lines.count == 24)
        #expect(manifest.count == lines.count)
        for (index, jws) in lines.enumerated() {
            let expected = manifest[index]
            let r = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: Fixtures.jwsPayload(jws))
            let line = "line \(index + 1)"
            #expect(r.environment?.rawValue == Self.string(expected["environment"]), "\(line)")
            #expect(r.productId == Self.string(expected["productId"]), "\(line)")
            #expect(r.signedDate?.millisecondsSince1970 == Self.int64(expected["signedDate"]), "\(line)")
            #expect(r.originalTransactionId != nil, "\(line)")
            #expect(r.autoRenewStatus?.isDocumented == true, "\(line)")
            #expect(try JSONDecoder().decode(JWSRenewalInfoDecodedPayload.self, from: Data(Fixtures.jwsPayload(jws))) == r)
        }
    }
}
