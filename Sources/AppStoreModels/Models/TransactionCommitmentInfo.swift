/// Progress through a monthly-billed subscription with a 12-month commitment.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/transactioncommitmentinfo>
public struct TransactionCommitmentInfo: Hashable, Sendable, Codable {
    /// The billing period this transaction pays for, counting from 1.
    public var billingPeriodNumber: Int?
    /// When the commitment ends.
    public var commitmentExpiresDate: AppleTimestamp?
    /// The total price of the commitment in milliunits.
    public var commitmentPrice: Int64?
    /// The number of billing periods in the commitment.
    public var totalBillingPeriods: Int?

    /// Creates a value; every field defaults to absent.
    public init(
        billingPeriodNumber: Int? = nil,
        commitmentExpiresDate: AppleTimestamp? = nil,
        commitmentPrice: Int64? = nil,
        totalBillingPeriods: Int? = nil
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
        self.totalBillingPeriods = totalBillingPeriods
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case billingPeriodNumber
        case commitmentExpiresDate
        case commitmentPrice
        case totalBillingPeriods
    }
}

extension TransactionCommitmentInfo: JSONFastDecodable {
    private static let keys = JSONKeyTable<CodingKeys>()

    init(json reader: inout JSONReader) throws {
        self.init()
        try reader.beginObject()
        var first = true
        while try reader.nextMember(&first) {
            guard let key = try reader.readKey(Self.keys) else {
                try reader.skipValue()
                continue
            }
            switch key {
            case .billingPeriodNumber: billingPeriodNumber = try reader.int()
            case .commitmentExpiresDate: commitmentExpiresDate = try reader.timestamp()
            case .commitmentPrice: commitmentPrice = try reader.int64()
            case .totalBillingPeriods: totalBillingPeriods = try reader.int()
            }
        }
    }
}
