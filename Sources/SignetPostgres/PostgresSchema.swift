import AppStoreModels
import NIOCore
import PostgresNIO
import SignetCore
import SignetState

/// The SQL of ``PostgresStateStore`` and the mapping between rows and Signet's types.
enum PostgresSchema {
    /// One JSON array of `items`, each written by `row`, bound as `$1`: a batch's rows for
    /// `jsonb_to_recordset($1::jsonb)`, one statement however many there are.
    static func recordset<Item>(_ items: some Sequence<Item>, _ row: (inout JSONText, Item) throws -> Void) rethrows -> PostgresBindings {
        var rows = JSONText()
        rows.beginArray()
        for item in items { try row(&rows, item) }
        rows.endArray()
        return jsonBinds(rows)
    }

    /// `json` bound as `$1` (text: PostgreSQL casts it to jsonb).
    static func jsonBinds(_ json: JSONText) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(String(decoding: json.bytes, as: UTF8.self))
        return binds
    }

    /// Every subscription column but `version`, with its SQL type: the record type of the
    /// batch writes (`jsonb_to_recordset`), and, by name, the columns read and written.
    static let subscriptionRecordType = """
        original_transaction_id text, state text, entitled boolean, transaction_id text, product_id text, \
        product_type text, bundle_id text, environment text, app_account_token text, ownership text, \
        purchase_date bigint, expires_date bigint, transaction_signed_date bigint, revocation_date bigint, \
        revocation_reason bigint, revocation_type text, auto_renew boolean, auto_renew_product_id text, \
        billing_retry boolean, grace_period_expires_date bigint, expiration_intent bigint, \
        renewal_signed_date bigint, evaluated_at bigint, last_notification_type text, last_subtype text, \
        last_notification_uuid text, expires_date_source text, renewal_date bigint, next_boundary bigint, \
        subscription_group_id text, revocation_percentage bigint, previous_original_transaction_id text, \
        migrated_to_original_transaction_id text, app_transaction_id text, recent_subscription_start_date bigint
        """

    /// The names of ``subscriptionRecordType``, in order.
    static let subscriptionFieldNames: [String] = subscriptionRecordType.split(separator: ",").map {
        String($0.split(whereSeparator: \.isWhitespace)[0])
    }

    /// The columns ``snapshot(from:)`` reads, `version` last.
    static let subscriptionColumns = (subscriptionFieldNames + ["version"]).joined(separator: ", ")

    static let outboxColumns = "seq, event_id, event_type, message_key, environment, product_id, payload, input_key"

    /// ``outboxColumns`` over the alias `o` (the claiming `UPDATE signet_outbox o ... RETURNING`).
    static let aliasedOutboxColumns = qualified(outboxColumns, "o")

    /// Whether the instance owning an outbox row is alive (its lease not expired), as SQL
    /// over the alias `o`; `$1` is this instance's id.
    static let ownedByAnotherLiveInstance = """
        (o.owner IS NOT NULL AND o.owner <> $1 AND EXISTS (
            SELECT 1 FROM signet_instances i WHERE i.id = o.owner AND i.lease_expires_at > now()))
        """

    /// Appends the snapshot as one JSON object of ``subscriptionRecordType`` (nil values
    /// left out, which reads as NULL), plus `expected`: the version it replaces (0: none).
    static func appendJSON(_ snapshot: SubscriptionSnapshot, expected: Int64, to json: inout JSONText) {
        json.beginObject()
        json.field("original_transaction_id", snapshot.originalTransactionId)
        json.field("state", snapshot.state.rawValue)
        json.field("entitled", snapshot.entitled)
        json.field("transaction_id", snapshot.transactionId)
        json.field("product_id", snapshot.productId)
        json.field("product_type", snapshot.productType)
        json.field("bundle_id", snapshot.bundleId)
        json.field("environment", snapshot.environment)
        json.field("app_account_token", snapshot.appAccountToken?.description)
        json.field("ownership", snapshot.ownership)
        json.field("purchase_date", snapshot.purchaseDate)
        json.field("expires_date", snapshot.expiresDate)
        json.field("transaction_signed_date", snapshot.transactionSignedDate)
        json.field("revocation_date", snapshot.revocationDate)
        json.field("revocation_reason", snapshot.revocationReason)
        json.field("revocation_type", snapshot.revocationType)
        json.field("auto_renew", snapshot.autoRenewEnabled)
        json.field("auto_renew_product_id", snapshot.autoRenewProductId)
        json.field("billing_retry", snapshot.isInBillingRetryPeriod)
        json.field("grace_period_expires_date", snapshot.gracePeriodExpiresDate)
        json.field("expiration_intent", snapshot.expirationIntent)
        json.field("renewal_signed_date", snapshot.renewalSignedDate)
        json.field("evaluated_at", snapshot.evaluatedAt)
        json.field("last_notification_type", snapshot.lastNotificationType)
        json.field("last_subtype", snapshot.lastSubtype)
        json.field("last_notification_uuid", snapshot.lastNotificationUUID)
        json.field("expires_date_source", snapshot.expiresDateSource)
        json.field("renewal_date", snapshot.renewalDate)
        // Persisted (indexed) so the expiry sweep finds due purchases without a scan.
        json.field("next_boundary", snapshot.nextBoundary)
        json.field("subscription_group_id", snapshot.subscriptionGroupIdentifier)
        json.field("revocation_percentage", snapshot.revocationPercentage)
        json.field("previous_original_transaction_id", snapshot.previousOriginalTransactionId)
        json.field("migrated_to_original_transaction_id", snapshot.migratedToOriginalTransactionId)
        json.field("app_transaction_id", snapshot.appTransactionId)
        json.field("recent_subscription_start_date", snapshot.recentSubscriptionStartDate)
        json.field("expected", expected)
        json.endObject()
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
        snapshot.appAccountToken = try text(8).flatMap { AppAccountToken($0) }
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
        snapshot.subscriptionGroupIdentifier = try text(29)
        snapshot.revocationPercentage = try int(30)
        snapshot.previousOriginalTransactionId = try text(31)
        snapshot.migratedToOriginalTransactionId = try text(32)
        snapshot.appTransactionId = try text(33)
        snapshot.recentSubscriptionStartDate = try int(34)
        return (snapshot, try int(35) ?? 1)
    }

    /// The `record` documents (selected as `record::text`, the first column) of `rows`, decoded.
    static func records<Value: Decodable>(_ type: Value.Type, from rows: [PostgresRow]) throws -> [Value] {
        try rows.map { try ConsumptionRecordCoding.decode(type, from: try $0.decode(String.self)) }
    }

    /// The columns ``consentRestriction(from:)`` reads.
    static let consentRestrictionColumns =
        "app_transaction_id, bundle_id, environment, rescinded_at, notification_uuid, cleared_at, cleared_by"

    /// One app transaction's restriction (`$1`), read with ``consentRestriction(from:startingAt:)``.
    static let selectConsentRestriction =
        "SELECT \(consentRestrictionColumns) FROM signet_consent_restrictions WHERE app_transaction_id = $1"

    /// Purchases (`s`, ``subscriptionColumns``) each with its download's consent restriction
    /// (`c`, ``consentRestrictionColumns``, all null when none): an entitlement answer in one
    /// round trip. The caller appends the WHERE clause.
    static let selectSubscriptionsWithConsent = """
        SELECT \(qualified(subscriptionColumns, "s")), \(qualified(consentRestrictionColumns, "c"))
        FROM signet_subscriptions s LEFT JOIN signet_consent_restrictions c ON c.app_transaction_id = s.app_transaction_id
        """

    /// A row of ``selectSubscriptionsWithConsent``.
    static func snapshotWithConsent(from row: PostgresRow) throws -> (SubscriptionSnapshot, ConsentRestriction?) {
        let snapshot = try snapshot(from: row).0
        let first = subscriptionFieldNames.count + 1
        guard try PostgresRandomAccessRow(row)[first].decode(String?.self) != nil else { return (snapshot, nil) }
        return (snapshot, try consentRestriction(from: row, startingAt: first))
    }

    /// `columns` (comma-separated) each prefixed with `alias.`.
    static func qualified(_ columns: String, _ alias: String) -> String {
        columns.split(separator: ",").map { "\(alias).\($0.split(whereSeparator: \.isWhitespace)[0])" }.joined(separator: ", ")
    }

    /// Reads a row selected with ``consentRestrictionColumns``, from column `first` on.
    static func consentRestriction(from row: PostgresRow, startingAt first: Int = 0) throws -> ConsentRestriction {
        let cells = PostgresRandomAccessRow(row)
        return ConsentRestriction(
            appTransactionId: try cells[first].decode(String.self), bundleId: try cells[first + 1].decode(String?.self),
            environment: try cells[first + 2].decode(String?.self), rescindedAt: try cells[first + 3].decode(Int64.self),
            notificationUUID: try cells[first + 4].decode(String?.self), clearedAt: try cells[first + 5].decode(Int64?.self),
            clearedBy: try cells[first + 6].decode(String?.self))
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
