// Answers "does this customer have access right now?" from the store a pipeline keeps.
//
//   EntitlementQuery --store signet.sqlite --original-transaction-id 2000000123456789
//   EntitlementQuery --store signet.sqlite --app-account-token 7E3FB20B-4CDB-47CC-936D-99D65F608138
//
// Opens the SQLite store read-only, so it may run beside the pipeline that writes it. Prints
// one line per purchase, then the answer. Exit status: 0 access, 1 no access, 2 bad usage,
// 3 no purchase known.
import Foundation
import SignetState

func option(_ flag: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

guard let storePath = option("--store") else {
    FileHandle.standardError.write(Data("usage: EntitlementQuery --store DB (--original-transaction-id ID | --app-account-token UUID)\n".utf8))
    exit(2)
}

do {
    var options = SQLiteStateStore.Options()
    options.readOnly = true
    let store = try SQLiteStateStore(path: storePath, options: options)
    defer { try? store.close() }
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    let purchases: [Entitlement]
    if let id = option("--original-transaction-id") {
        purchases = try store.entitlements(originalTransactionId: id, at: now)
    } else if let text = option("--app-account-token") {
        // Any case is accepted: a UUID is a UUID however the app wrote it.
        let token = try AppAccountToken(parsing: text)
        purchases = try store.entitlements(appAccountToken: token, at: now)
    } else {
        FileHandle.standardError.write(Data("EntitlementQuery: give --original-transaction-id or --app-account-token\n".utf8))
        exit(2)
    }
    guard !purchases.isEmpty else {
        print("no purchase known")
        exit(3)
    }
    for purchase in purchases {
        let expires = purchase.expiresDate.map { Date(timeIntervalSince1970: Double($0) / 1000).formatted(.iso8601) } ?? "never"
        print("\(purchase.originalTransactionId) \(purchase.productId ?? "-") \(purchase.state.rawValue) entitled=\(purchase.entitled) expires=\(expires)")
    }
    // A parent's withdrawn consent restricts access whatever `entitled` says.
    let access = purchases.contains { $0.entitled && !$0.restricted }
    print(access ? "has access" : "no access")
    exit(access ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("EntitlementQuery: \(error)\n".utf8))
    exit(2)
}
