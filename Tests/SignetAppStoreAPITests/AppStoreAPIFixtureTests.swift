import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetTestSupport
import Testing

@Suite("Apple's App Store Server Library response fixtures decode with Signet's models")
struct AppStoreAPIFixtureTests {
    static func load<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
        let url = FixturePaths.fixtures.appendingPathComponent("appstore-api/\(name).json")
        return try AppStoreJSON.decode(type, from: Array(try Data(contentsOf: url)))
    }

    @Test("getNotificationHistoryResponse")
    func notificationHistory() throws {
        let page = try Self.load("getNotificationHistoryResponse", as: NotificationHistoryResponse.self)
        #expect(page.hasMore)
        #expect(page.paginationToken == "57715481-805a-4283-8499-1c19b5d6b20a")
        #expect(page.notificationHistory.map(\.signedPayload) == ["signed_payload_one", "signed_payload_two"])
        #expect(page.notificationHistory[0].sendAttempts == [
            SendAttempt(attemptDate: 1_698_148_900_000, sendAttemptResult: "NO_RESPONSE"),
            SendAttempt(attemptDate: 1_698_148_950_000, sendAttemptResult: "SUCCESS"),
        ])
        #expect(page.notificationHistory[1].sendAttempts.map(\.sendAttemptResult) == ["CIRCULAR_REDIRECT"])
    }

    @Test("getAllSubscriptionStatusesResponse")
    func statuses() throws {
        let response = try Self.load("getAllSubscriptionStatusesResponse", as: SubscriptionStatusesResponse.self)
        #expect(response.environment == .localTesting)
        #expect(response.bundleId == "com.example")
        #expect(response.appAppleId == 5_454_545)
        #expect(response.data.map(\.subscriptionGroupIdentifier) == ["sub_group_one", "sub_group_two"])
        let first = response.data[0].lastTransactions
        #expect(first.map(\.status) == [.active, .revoked])
        #expect(first.map(\.originalTransactionId) == ["3749183", "5314314134"])
        #expect(first[0].signedTransactionInfo == "signed_transaction_one")
        #expect(first[0].signedRenewalInfo == "signed_renewal_one")
        #expect(response.data[1].lastTransactions.map(\.status) == [.expired])
    }

    @Test("transactionInfoResponse and transactionHistoryResponse")
    func transactions() throws {
        #expect(try Self.load("transactionInfoResponse", as: TransactionInfoResponse.self).signedTransactionInfo == "signed_transaction_info_value")
        let history = try Self.load("transactionHistoryResponse", as: TransactionHistoryResponse.self)
        #expect(history.revision == "revision_output")
        #expect(history.hasMore)
        #expect(history.bundleId == "com.example")
        #expect(history.appAppleId == 323_232)
        #expect(history.environment == .localTesting)
        #expect(history.signedTransactions == ["signed_transaction_value", "signed_transaction_value2"])
    }

    @Test("requestTestNotificationResponse and getTestNotificationStatusResponse")
    func testNotification() throws {
        let token = try Self.load("requestTestNotificationResponse", as: TestNotificationResponse.self)
        #expect(token.testNotificationToken == "ce3af791-365e-4c60-841b-1674b43c1609")
        let status = try Self.load("getTestNotificationStatusResponse", as: TestNotificationStatusResponse.self)
        #expect(status.signedPayload == "signed_payload")
        #expect(status.sendAttempts.map(\.sendAttemptResult) == ["NO_RESPONSE", "SUCCESS"])
    }
}

@Suite("Apple's error fixtures, answered by the fake, become AppStoreAPIError with Apple's code and message")
struct AppStoreAPIErrorFixtureTests {
    @Test("each error body", arguments: [
        ("apiException", 500, 5_000_000, "An unknown error occurred.", AppStoreAPIError.Kind.unavailable),
        ("apiTooManyRequestsException", 429, 4_290_000, "Rate limit exceeded.", .rateLimited),
        ("apiUnknownError", 400, 9_990_000, "Testing error.", .permanent),
        ("transactionIdNotFoundError", 404, 4_040_010, "Transaction id not found.", .permanent),
        ("invalidTransactionIdError", 400, 4_000_006, "Invalid transaction id.", .permanent),
    ] as [(String, Int, Int, String, AppStoreAPIError.Kind)])
    func errorBody(file: String, status: Int, code: Int, message: String, kind: AppStoreAPIError.Kind) async throws {
        let body = Array(try Data(contentsOf: FixturePaths.fixtures.appendingPathComponent("appstore-api/\(file).json")))
        try await withFakeAPI(client: { try $0.client($1, maxRetries: 0) }) { fake, client in
            fake.script([.raw(status: status, body: body)], on: .transactionInfo)
            let error = await #expect(throws: AppStoreAPIError.self) { try await client.transactionInfo(transactionId: "1") }
            #expect(error?.kind == kind)
            #expect(error?.status == status)
            #expect(error?.errorCode == code)
            #expect(error?.errorMessage == message)
            #expect(error?.description.contains(String(code)) == true)
            #expect(error?.isTransactionIdNotFound == (code == 4_040_010))
        }
    }
}
