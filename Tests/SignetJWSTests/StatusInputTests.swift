import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import Testing

/// A status line (an item of Get All Subscription Statuses' `lastTransactions`, as Apple sends
/// it) through the real `decode` and `verify` stages: both JWS verified, of one purchase.
@Suite("Status lines: signedTransactionInfo with its signedRenewalInfo")
struct StatusInputTests {
    typealias A = AdversarialTests

    /// The record after `decode` and `verify`, rejected as a pipeline would reject it.
    static func run(_ line: String) throws -> Record {
        let verify = VerifyStage(verifier: try A.verifier(.cached), parallelism: 1)
        var record = Record(raw: Array(line.utf8), position: SourcePosition(stream: "test", offset: 0))
        do throws(RecordRejection) {
            try DecodeStage().process(record: &record)
            try verify.process(record: &record)
        } catch {
            record.reject(error, stage: "test")
        }
        return record
    }

    static func line(transaction: String, renewal: String, status: String = "1") -> String {
        #"{"originalTransactionId":"2000000000","status":\#(status),"signedTransactionInfo":"\#(transaction)","signedRenewalInfo":"\#(renewal)"}"#
    }

    @Test("Apple's item verifies as one status; its document carries both payloads")
    func verifies() throws {
        let transaction = try A.signed(A.transactionJSON()), renewal = try A.signed(A.renewalJSON())
        for (text, expected) in [("1", 1 as Int?), ("null", nil), ("4", 4)] {
            let record = try Self.run(Self.line(transaction: transaction, renewal: renewal, status: text))
            guard case .status(let status)? = record[VerifiedPayloadPart.self] else {
                Issue.record("not a status: \(record.status)")
                continue
            }
            #expect(status.transaction.payload.transactionId == "2000000001")
            #expect(status.renewalInfo.payload.originalTransactionId == "2000000000")
            #expect(status.status == expected)
        }
        let document = VerifyStage.output(for: try #require(try Self.run(Self.line(transaction: transaction, renewal: renewal))[VerifiedPayloadPart.self]))
        let json = try #require(JSONSerialization.jsonObject(with: Data(document.value)) as? [String: Any])
        #expect(json["kind"] as? String == "status")
        #expect(json["status"] as? Int == 1)
        #expect(json["transactionInfo"] != nil && json["renewalInfo"] != nil)
    }

    @Test("a forged half, another purchase's renewal info, a bad status number: rejected with a reason, never verified")
    func refusals() throws {
        let transaction = try A.signed(A.transactionJSON()), renewal = try A.signed(A.renewalJSON())
        let forged = try A.signed(A.renewalJSON()) { $0 = A.otherPKI.signer }
        let otherPurchase = try A.signed(A.renewalJSON().replacingOccurrences(of: "\"2000000000\"", with: "\"3000000000\""))
        let productionRenewal = try A.signed(A.renewalJSON(environment: "Production"))
        let cases: [(String, String, ReasonCode)] = [
            ("forged renewal info", Self.line(transaction: transaction, renewal: forged), .invalidCertificateChain),
            ("forged transaction", Self.line(transaction: try A.signed(A.transactionJSON()) { $0 = A.otherPKI.signer }, renewal: renewal), .invalidCertificateChain),
            ("another purchase", Self.line(transaction: transaction, renewal: otherPurchase), .malformedPayload),
            ("renewal info of the other environment", Self.line(transaction: transaction, renewal: productionRenewal), .environmentMismatch),
            ("status not a number", Self.line(transaction: transaction, renewal: renewal, status: "\"1\""), .malformedJSON),
            ("status out of range", Self.line(transaction: transaction, renewal: renewal, status: "99999999999999999999"), .malformedJSON),
            ("with a signedPayload too", #"{"signedPayload":"a.b.c","signedTransactionInfo":"\#(transaction)","signedRenewalInfo":"\#(renewal)"}"#, .malformedJSON),
        ]
        for (name, line, reason) in cases {
            let record = try Self.run(line)
            #expect(record[VerifiedPayloadPart.self] == nil, "\(name)")
            guard case .rejected(let rejection, _) = record.status else {
                Issue.record("\(name): not rejected")
                continue
            }
            #expect(rejection.reason == reason, "\(name): \(rejection)")
        }
    }
}
