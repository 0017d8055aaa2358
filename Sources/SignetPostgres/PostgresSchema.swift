import NIOCore
import PostgresNIO
import SignetState

/// The SQL of ``PostgresStateStore`` and the mapping between rows and Signet's types.
enum PostgresSchema {
    static let subscriptionColumns = """
        original_transaction_id, state, entitled, transaction_id, product_id, product_type, bundle_id, \
        environment, app_account_token, ownership, purchase_date, expires_date, transaction_signed_date, \
        revocation_date, revocation_reason, revocation_type, auto_renew, auto_renew_product_id, billing_retry, \
        grace_period_expires_date, expiration_intent, renewal_signed_date, evaluated_at, last_notification_type, \
        last_subtype, last_notification_uuid, expires_date_source, renewal_date, next_boundary, version
        """

    /// How many values ``bind(_:to:)`` appends (every column but `version`).
    static let boundColumns = 29

    static let outboxColumns = "seq, event_id, event_type, message_key, environment, product_id, payload, input_key"

    /// Whether the instance owning an outbox row is alive (its lease not expired), as SQL
    /// over the alias `o`; `$1` is this instance's id.
    static let ownedByAnotherLiveInstance = """
        (o.owner IS NOT NULL AND o.owner <> $1 AND EXISTS (
            SELECT 1 FROM signet_instances i WHERE i.id = o.owner AND i.lease_expires_at > now()))
        """

    /// Appends the snapshot's values as `$first...` binds, in ``subscriptionColumns`` order (without version).
    static func bind(_ snapshot: SubscriptionSnapshot, to binds: inout PostgresBindings) {
        binds.append(snapshot.originalTransactionId)
        binds.append(snapshot.state.rawValue)
        binds.append(snapshot.entitled)
        binds.append(snapshot.transactionId)
        binds.append(snapshot.productId)
        binds.append(snapshot.productType)
        binds.append(snapshot.bundleId)
        binds.append(snapshot.environment)
        binds.append(snapshot.appAccountToken)
        binds.append(snapshot.ownership)
        binds.append(snapshot.purchaseDate)
        binds.append(snapshot.expiresDate)
        binds.append(snapshot.transactionSignedDate)
        binds.append(snapshot.revocationDate)
        binds.append(snapshot.revocationReason)
        binds.append(snapshot.revocationType)
        binds.append(snapshot.autoRenewEnabled)
        binds.append(snapshot.autoRenewProductId)
        binds.append(snapshot.isInBillingRetryPeriod)
        binds.append(snapshot.gracePeriodExpiresDate)
        binds.append(snapshot.expirationIntent)
        binds.append(snapshot.renewalSignedDate)
        binds.append(snapshot.evaluatedAt)
        binds.append(snapshot.lastNotificationType)
        binds.append(snapshot.lastSubtype)
        binds.append(snapshot.lastNotificationUUID)
        binds.append(snapshot.expiresDateSource)
        binds.append(snapshot.renewalDate)
        // Persisted (indexed) so the expiry sweep finds due purchases without a scan.
        binds.append(snapshot.nextBoundary)
    }

    /// `$1, $2, ..., $count`.
    static func placeholders(_ count: Int, from first: Int = 1) -> String {
        (first..<(first + count)).map { "$\($0)" }.joined(separator: ", ")
    }

    /// Reads a row selected with ``subscriptionColumns``: the snapshot and its version.
    static func snapshot(from row: PostgresRow) throws -> (SubscriptionSnapshot, Int64) {
        let cells = PostgresRandomAccessRow(row)
        func text(_ index: Int) throws -> String? { try cells[index].decode(String?.self) }
        func int(_ index: Int) throws -> Int64? { try cells[index].decode(Int64?.self) }
        func bool(_ index: Int) throws -> Bool? { try cells[index].decode(Bool?.self) }
        var snapshot = SubscriptionSnapshot(
            originalTransactionId: try text(0) ?? "",
            // A state written by a newer Signet reads as expired rather than failing the query.
            state: try text(1).flatMap(SubscriptionState.init(rawValue:)) ?? .expired,
            entitled: try bool(2) ?? false,
            evaluatedAt: try int(22) ?? 0)
        snapshot.transactionId = try text(3)
        snapshot.productId = try text(4)
        snapshot.productType = try text(5)
        snapshot.bundleId = try text(6)
        snapshot.environment = try text(7)
        snapshot.appAccountToken = try text(8)
        snapshot.ownership = try text(9)
        snapshot.purchaseDate = try int(10)
        snapshot.expiresDate = try int(11)
        snapshot.transactionSignedDate = try int(12)
        snapshot.revocationDate = try int(13)
        snapshot.revocationReason = try int(14)
        snapshot.revocationType = try text(15)
        snapshot.autoRenewEnabled = try bool(16)
        snapshot.autoRenewProductId = try text(17)
        snapshot.isInBillingRetryPeriod = try bool(18)
        snapshot.gracePeriodExpiresDate = try int(19)
        snapshot.expirationIntent = try int(20)
        snapshot.renewalSignedDate = try int(21)
        snapshot.lastNotificationType = try text(23)
        snapshot.lastSubtype = try text(24)
        snapshot.lastNotificationUUID = try text(25)
        snapshot.expiresDateSource = try text(26)
        snapshot.renewalDate = try int(27)
        return (snapshot, try int(29) ?? 1)
    }

    /// Reads a row selected with ``outboxColumns``.
    static func outboxEntry(from row: PostgresRow) throws -> OutboxEntry {
        let cells = PostgresRandomAccessRow(row)
        let payload = try cells[6].decode(ByteBuffer.self)
        return OutboxEntry(
            sequence: try cells[0].decode(Int64.self), eventId: try cells[1].decode(String.self),
            eventType: try cells[2].decode(String.self), key: try cells[3].decode(String.self),
            environment: try cells[4].decode(String?.self), productId: try cells[5].decode(String?.self),
            payload: Array(payload.readableBytesView), inputKey: try cells[7].decode(String?.self))
    }
}
