import AppStoreModels

/// The SQL of ``SQLiteStateStore``, in one place.
///
/// Indexes exist only where a query needs them: the primary keys, the appAccountToken
/// lookup of `signet entitlements`, `seen_at` for dedupe-key retention and `delivered_at` for
/// the history's.
enum SQLiteSchema {
    static let version = 1

    static let create = """
        CREATE TABLE IF NOT EXISTS signet_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS subscriptions (
            original_transaction_id TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            entitled INTEGER NOT NULL,
            transaction_id TEXT,
            product_id TEXT,
            product_type TEXT,
            bundle_id TEXT,
            environment TEXT,
            app_account_token TEXT,
            ownership TEXT,
            purchase_date INTEGER,
            expires_date INTEGER,
            transaction_signed_date INTEGER,
            revocation_date INTEGER,
            revocation_reason INTEGER,
            revocation_type TEXT,
            auto_renew INTEGER,
            auto_renew_product_id TEXT,
            billing_retry INTEGER,
            grace_period_expires_date INTEGER,
            expiration_intent INTEGER,
            renewal_signed_date INTEGER,
            evaluated_at INTEGER NOT NULL,
            last_notification_type TEXT,
            last_subtype TEXT,
            last_notification_uuid TEXT,
            expires_date_source TEXT,
            renewal_date INTEGER,
            next_boundary INTEGER,
            subscription_group_id TEXT,
            revocation_percentage INTEGER,
            previous_original_transaction_id TEXT,
            migrated_to_original_transaction_id TEXT,
            app_transaction_id TEXT,
            recent_subscription_start_date INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS subscriptions_app_account_token
            ON subscriptions (app_account_token) WHERE app_account_token IS NOT NULL;
        CREATE TABLE IF NOT EXISTS entitlement_names (
            entitlement TEXT NOT NULL,
            granted_by TEXT NOT NULL,
            PRIMARY KEY (entitlement, granted_by)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS consent_restrictions (
            app_transaction_id TEXT PRIMARY KEY,
            bundle_id TEXT,
            environment TEXT,
            rescinded_at INTEGER NOT NULL,
            notification_uuid TEXT,
            cleared_at INTEGER,
            cleared_by TEXT
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS consumption_requests (
            transaction_id TEXT NOT NULL,
            requested_at INTEGER NOT NULL,
            due_at INTEGER,
            record TEXT NOT NULL,
            PRIMARY KEY (transaction_id, requested_at)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS consumption_requests_due ON consumption_requests (due_at) WHERE due_at IS NOT NULL;
        CREATE INDEX IF NOT EXISTS consumption_requests_requested_at ON consumption_requests (requested_at);
        CREATE INDEX IF NOT EXISTS consumption_requests_purchase
            ON consumption_requests (json_extract(record, '$.originalTransactionId'));
        CREATE TABLE IF NOT EXISTS consumption_ledger (key TEXT PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS retention_offers (
            request_id TEXT PRIMARY KEY,
            original_transaction_id TEXT NOT NULL,
            answered_at INTEGER NOT NULL,
            outcome_at INTEGER,
            record TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS retention_offers_purchase ON retention_offers (original_transaction_id, answered_at);
        CREATE INDEX IF NOT EXISTS retention_offers_answered_at ON retention_offers (answered_at);
        CREATE TABLE IF NOT EXISTS support_audit (
            request_id TEXT PRIMARY KEY,
            original_transaction_id TEXT,
            at INTEGER NOT NULL,
            record TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS support_audit_purchase ON support_audit (original_transaction_id, at)
            WHERE original_transaction_id IS NOT NULL;
        CREATE INDEX IF NOT EXISTS support_audit_at ON support_audit (at);
        CREATE TABLE IF NOT EXISTS dedupe_keys (key TEXT PRIMARY KEY, seen_at INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS dedupe_keys_seen_at ON dedupe_keys (seen_at);
        CREATE TABLE IF NOT EXISTS outbox (
            seq INTEGER PRIMARY KEY,
            event_id TEXT NOT NULL,
            event_type TEXT NOT NULL,
            message_key TEXT NOT NULL,
            environment TEXT,
            product_id TEXT,
            payload BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            delivered_at INTEGER,
            input_key TEXT
        );
        CREATE TABLE IF NOT EXISTS rate_budgets (
            bucket TEXT PRIMARY KEY,
            next_slot_us INTEGER NOT NULL,
            interval_us INTEGER NOT NULL,
            paused_until_us INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS forward_queue (
            id INTEGER PRIMARY KEY,
            target TEXT NOT NULL,
            body BLOB NOT NULL,
            enqueued_at INTEGER NOT NULL,
            due_at INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        );
        CREATE INDEX IF NOT EXISTS forward_queue_due ON forward_queue (target, due_at);
        INSERT OR IGNORE INTO signet_meta (name, value) VALUES ('schema_version', '1');
        """

    /// Apple types appAccountToken as a UUID; earlier versions compared it as text, so a token
    /// written in upper case (Swift's uuidString) named another customer. Run once per database
    /// (marked in `signet_meta`): stored tokens become the canonical lower-case form, and two
    /// spellings of one customer's consent merge into the entry that decides (the newest; at
    /// the same instant a withdrawal), rows in ascending order so the decider is written last.
    static let canonicalAppAccountTokensMark = "app_account_tokens_canonical"
    /// A lower-case hyphenated UUID, as a GLOB pattern. A refund question stored with anything
    /// else (an empty string Apple's payload carried) loses the token: read back typed, it
    /// would fail the whole listing.
    static let uuidGlob = [8, 4, 4, 4, 12].map { String(repeating: "[0-9a-f]", count: $0) }.joined(separator: "-")
    static let canonicalizeAppAccountTokens = """
        UPDATE subscriptions SET app_account_token = lower(app_account_token)
            WHERE app_account_token <> lower(app_account_token);
        UPDATE consumption_requests
            SET record = json_set(record, '$.appAccountToken', lower(json_extract(record, '$.appAccountToken')))
            WHERE json_extract(record, '$.appAccountToken') <> lower(json_extract(record, '$.appAccountToken'));
        UPDATE consumption_requests SET record = json_remove(record, '$.appAccountToken')
            WHERE json_type(record, '$.appAccountToken') IS NOT NULL
              AND NOT (json_type(record, '$.appAccountToken') = 'text' AND json_extract(record, '$.appAccountToken') GLOB '\(uuidGlob)');
        INSERT INTO consumption_ledger (key, record)
            SELECT 'appAccountToken:' || lower(substr(key, 17)), json_set(record, '$.appAccountToken', lower(substr(key, 17)))
            FROM consumption_ledger
            WHERE substr(key, 1, 16) = 'appAccountToken:' AND key <> 'appAccountToken:' || lower(substr(key, 17))
            ORDER BY json_extract(record, '$.at'), json_extract(record, '$.consented') DESC
            ON CONFLICT (key) DO UPDATE SET record = excluded.record
            WHERE json_extract(excluded.record, '$.at') > json_extract(consumption_ledger.record, '$.at')
                OR (json_extract(excluded.record, '$.at') = json_extract(consumption_ledger.record, '$.at')
                    AND json_extract(excluded.record, '$.consented') = 0);
        DELETE FROM consumption_ledger
            WHERE substr(key, 1, 16) = 'appAccountToken:' AND key <> 'appAccountToken:' || lower(substr(key, 17));
        INSERT OR REPLACE INTO signet_meta (name, value) VALUES ('app_account_tokens_canonical', '1');
        """

    /// Books a bucket's next slot (``SQLiteStateStore/bookSlot(bucket:interval:)``): the later
    /// of its next free instant, the end of a pause and now (?2, µs since 1970); the next free
    /// instant moves one interval (the longest asked) past it. Returns the wait in µs.
    static let bookRateSlot = SQLiteQuery("""
        INSERT INTO rate_budgets AS b (bucket, next_slot_us, interval_us, paused_until_us) VALUES (?1, ?2 + ?3, ?3, 0)
        ON CONFLICT (bucket) DO UPDATE SET
            interval_us = max(b.interval_us, excluded.interval_us),
            next_slot_us = max(b.next_slot_us, b.paused_until_us, excluded.next_slot_us - excluded.interval_us)
                + max(b.interval_us, excluded.interval_us)
        RETURNING next_slot_us - interval_us - ?2
        """)
    /// Apple's pause of a bucket until ?2 (µs since 1970); a later one already set wins.
    static let pauseRateBucket = SQLiteQuery("""
        INSERT INTO rate_budgets AS b (bucket, next_slot_us, interval_us, paused_until_us) VALUES (?1, 0, 0, ?2)
        ON CONFLICT (bucket) DO UPDATE SET paused_until_us = max(b.paused_until_us, excluded.paused_until_us)
        """)

    /// ``SubscriptionSnapshot/expectsRenewal`` and a period end (``SubscriptionSnapshot/periodEnd``)
    /// in (?1, ?2], ids after ?3 (keyset paging, so purchases asked already never hide the
    /// rest). A scan of the subscriptions, run every few hours by `appstore_reconcile`.
    static let selectStale = SQLiteQuery("""
        SELECT original_transaction_id, max(COALESCE(expires_date, renewal_date), COALESCE(renewal_date, expires_date)), environment
        FROM subscriptions
        WHERE product_type = 'Auto-Renewable Subscription' AND auto_renew = 1 AND expiration_intent IS NULL
          AND COALESCE(billing_retry, 0) = 0 AND revocation_date IS NULL AND migrated_to_original_transaction_id IS NULL
          AND max(COALESCE(expires_date, renewal_date), COALESCE(renewal_date, expires_date)) > ?1
          AND max(COALESCE(expires_date, renewal_date), COALESCE(renewal_date, expires_date)) <= ?2
          AND original_transaction_id > ?3
        ORDER BY original_transaction_id LIMIT ?4
        """)

    /// A purchase's history (`signet state history`): its kept outbox rows in order.
    static let createMessageKeyIndex = """
        CREATE INDEX IF NOT EXISTS outbox_message_key ON outbox (message_key, seq);
        """
    static let selectHistory = SQLiteQuery(
        "SELECT seq, created_at, delivered_at, payload FROM outbox WHERE message_key = ?1 ORDER BY seq DESC LIMIT ?2")

    /// Run after ``create`` once `outbox.input_key` exists (see ``SQLiteStateStore``'s migration).
    /// Partial: only rows still waiting for delivery, which acknowledgement deletes.
    static let createInputKeyIndex = """
        CREATE INDEX IF NOT EXISTS outbox_undelivered_input_key ON outbox (input_key) WHERE delivered_at IS NULL;
        """

    /// Delivered rows by delivery time, for ``pruneEvents``. Partial: a store that keeps no history
    /// deletes rows on acknowledgement and never writes `delivered_at`, so it pays nothing.
    static let createDeliveredIndex = """
        CREATE INDEX IF NOT EXISTS outbox_delivered_at ON outbox (delivered_at) WHERE delivered_at IS NOT NULL;
        """

    /// Columns added after the first release: (name, SQL type), added to older databases on open.
    static let addedSubscriptionColumns = [
        ("expires_date_source", "TEXT"), ("renewal_date", "INTEGER"), ("next_boundary", "INTEGER"),
        ("subscription_group_id", "TEXT"), ("revocation_percentage", "INTEGER"),
        ("previous_original_transaction_id", "TEXT"), ("migrated_to_original_transaction_id", "TEXT"),
        ("app_transaction_id", "TEXT"), ("recent_subscription_start_date", "INTEGER"),
    ]

    /// Run once the added columns exist. `next_boundary` of rows written before it existed
    /// (no renewal_date, no policy end then) is the earliest of the period and grace ends still ahead.
    static let createNextBoundaryIndex = """
        CREATE INDEX IF NOT EXISTS subscriptions_next_boundary ON subscriptions (next_boundary) WHERE next_boundary IS NOT NULL;
        CREATE INDEX IF NOT EXISTS subscriptions_app_transaction_id
            ON subscriptions (app_transaction_id) WHERE app_transaction_id IS NOT NULL;
        """
    static let backfillNextBoundary = """
        UPDATE subscriptions SET next_boundary = CASE
            WHEN expires_date > evaluated_at
                 AND NOT COALESCE(grace_period_expires_date > evaluated_at AND grace_period_expires_date < expires_date, 0)
                THEN expires_date
            WHEN grace_period_expires_date > evaluated_at THEN grace_period_expires_date
            ELSE NULL END
        WHERE revocation_date IS NULL AND (product_type IS NULL OR product_type NOT IN ('Consumable', 'Non-Consumable'))
        """

    /// The columns of a subscription row, in the order ``bind(_:to:keepingIndexedColumns:)``
    /// numbers its parameters (`?1` is `original_transaction_id`).
    static let subscriptionColumnNames = [
        "original_transaction_id", "state", "entitled", "transaction_id", "product_id", "product_type", "bundle_id",
        "environment", "app_account_token", "ownership", "purchase_date", "expires_date", "transaction_signed_date",
        "revocation_date", "revocation_reason", "revocation_type", "auto_renew", "auto_renew_product_id", "billing_retry",
        "grace_period_expires_date", "expiration_intent", "renewal_signed_date", "evaluated_at", "last_notification_type",
        "last_subtype", "last_notification_uuid", "expires_date_source", "renewal_date", "next_boundary",
        "subscription_group_id", "revocation_percentage", "previous_original_transaction_id",
        "migrated_to_original_transaction_id", "app_transaction_id", "recent_subscription_start_date",
    ]
    static let subscriptionColumns = subscriptionColumnNames.joined(separator: ", ")
    /// Positions in ``subscriptionColumnNames`` (0-based, as a row is read) of the columns the
    /// secondary indexes cover; their parameter numbers are one more.
    static let appAccountTokenColumn: Int32 = 8
    static let nextBoundaryColumn: Int32 = 28

    static let selectSubscription = SQLiteQuery("SELECT \(subscriptionColumns) FROM subscriptions WHERE original_transaction_id = ?1")
    static let selectIdsAfter = SQLiteQuery(
        "SELECT original_transaction_id FROM subscriptions WHERE original_transaction_id > ?1 ORDER BY original_transaction_id LIMIT ?2")
    static let selectByAppTransaction = SQLiteQuery(
        "SELECT \(subscriptionColumns) FROM subscriptions WHERE app_transaction_id = ?1 ORDER BY original_transaction_id")
    static let selectByToken = SQLiteQuery("SELECT \(subscriptionColumns) FROM subscriptions WHERE app_account_token = ?1 ORDER BY original_transaction_id")
    /// Updates a row in place when it exists (`INSERT OR REPLACE` would delete it and its
    /// index entries, then insert them again).
    static let upsertSubscription = SQLiteQuery(
        "INSERT INTO subscriptions (\(subscriptionColumns)) VALUES ("
            + subscriptionColumnNames.indices.map { "?\($0 + 1)" }.joined(separator: ", ")
            + ") ON CONFLICT (original_transaction_id) DO UPDATE SET "
            + subscriptionColumnNames.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
    /// Updates an existing row whose indexed columns keep their values. SQLite rewrites the
    /// entries of every index whose columns an UPDATE assigns, changed or not: leaving them
    /// out saves two index updates (and their dirty pages) per save.
    static let updateSubscriptionKeepingIndexes = SQLiteQuery(
        "UPDATE subscriptions SET "
            + subscriptionColumnNames.indices.dropFirst()
                .filter { ![appAccountTokenColumn, nextBoundaryColumn].contains(Int32($0)) }
                .map { "\(subscriptionColumnNames[$0]) = ?\($0 + 1)" }.joined(separator: ", ")
            + " WHERE original_transaction_id = ?1")
    static let selectDue = SQLiteQuery("SELECT \(subscriptionColumns) FROM subscriptions WHERE next_boundary IS NOT NULL AND next_boundary <= ?1 ORDER BY next_boundary, original_transaction_id LIMIT ?2")
    static let selectEntitlementNames = SQLiteQuery("SELECT entitlement, granted_by FROM entitlement_names ORDER BY entitlement, granted_by")
    static let deleteEntitlementNames = SQLiteQuery("DELETE FROM entitlement_names")
    static let insertEntitlementName = SQLiteQuery("INSERT OR IGNORE INTO entitlement_names (entitlement, granted_by) VALUES (?1, ?2)")
    static let selectConsentRestriction = SQLiteQuery(
        "SELECT app_transaction_id, bundle_id, environment, rescinded_at, notification_uuid, cleared_at, cleared_by FROM consent_restrictions WHERE app_transaction_id = ?1")
    static let upsertConsentRestriction = SQLiteQuery("""
        INSERT INTO consent_restrictions (app_transaction_id, bundle_id, environment, rescinded_at, notification_uuid, cleared_at, cleared_by)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
        ON CONFLICT (app_transaction_id) DO UPDATE SET bundle_id = excluded.bundle_id, environment = excluded.environment,
            rescinded_at = excluded.rescinded_at, notification_uuid = excluded.notification_uuid,
            cleared_at = excluded.cleared_at, cleared_by = excluded.cleared_by
        """)
    static let selectConsumptionRequests = SQLiteQuery(
        "SELECT record FROM consumption_requests WHERE transaction_id = ?1 ORDER BY requested_at")
    static let upsertConsumptionRequest = SQLiteQuery("""
        INSERT INTO consumption_requests (transaction_id, requested_at, due_at, record) VALUES (?1, ?2, ?3, ?4)
        ON CONFLICT (transaction_id, requested_at) DO UPDATE SET due_at = excluded.due_at, record = excluded.record
        """)
    static let selectConsumptionRequestsDue = SQLiteQuery(
        "SELECT record FROM consumption_requests WHERE due_at IS NOT NULL AND due_at <= ?1 ORDER BY due_at, transaction_id LIMIT ?2")
    /// The expression is the index's (`consumption_requests_purchase`), word for word, so the index serves it.
    static let selectConsumptionRequestsOfPurchase = SQLiteQuery("""
        SELECT record FROM consumption_requests WHERE json_extract(record, '$.originalTransactionId') = ?1
        ORDER BY requested_at, transaction_id LIMIT ?2
        """)
    static let selectConsumptionRequestsSince = SQLiteQuery(
        "SELECT record FROM consumption_requests WHERE requested_at >= ?1 ORDER BY requested_at, transaction_id LIMIT ?2")
    static let insertSupportAction = SQLiteQuery(
        "INSERT INTO support_audit (request_id, original_transaction_id, at, record) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (request_id) DO NOTHING")
    static let updateSupportAction = SQLiteQuery("UPDATE support_audit SET record = ?2 WHERE request_id = ?1")
    static let selectSupportAction = SQLiteQuery("SELECT record FROM support_audit WHERE request_id = ?1")
    static let selectSupportActionsOfPurchase = SQLiteQuery(
        "SELECT record FROM support_audit WHERE original_transaction_id = ?1 ORDER BY at, request_id")
    static let selectSupportActionsSince = SQLiteQuery(
        "SELECT record FROM support_audit WHERE at >= ?1 ORDER BY at, request_id LIMIT ?2")
    static let selectRetentionOffer = SQLiteQuery("SELECT record FROM retention_offers WHERE request_id = ?1")
    static let selectRetentionOffersOfPurchase = SQLiteQuery(
        "SELECT record FROM retention_offers WHERE original_transaction_id = ?1 AND answered_at >= ?2 ORDER BY answered_at, request_id")
    static let selectRetentionOffersSince = SQLiteQuery(
        "SELECT record FROM retention_offers WHERE answered_at >= ?1 ORDER BY answered_at, request_id LIMIT ?2")
    static let pruneRetentionOffers = SQLiteQuery("""
        DELETE FROM retention_offers WHERE request_id IN (
            SELECT request_id FROM retention_offers WHERE answered_at < ?1 ORDER BY answered_at LIMIT ?2)
        """)
    static let insertRetentionOffer = SQLiteQuery("""
        INSERT INTO retention_offers (request_id, original_transaction_id, answered_at, record) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (request_id) DO NOTHING
        """)
    /// The earliest deciding notification wins: answers given before it (`?2`, Apple's
    /// signing instant) with no outcome, or one signed later.
    static let settleRetentionOffers = SQLiteQuery("""
        UPDATE retention_offers SET outcome_at = ?2, record = json_set(record, '$.outcome', json(?3))
            WHERE original_transaction_id = ?1 AND answered_at <= ?2 AND (outcome_at IS NULL OR outcome_at > ?2)
        """)
    static let selectConsumptionLedgerEntry = SQLiteQuery("SELECT record FROM consumption_ledger WHERE key = ?1")
    static let upsertConsumptionLedgerEntry = SQLiteQuery(
        "INSERT INTO consumption_ledger (key, record) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET record = excluded.record")
    static let insertForward = SQLiteQuery(
        "INSERT INTO forward_queue (target, body, enqueued_at, due_at) VALUES (?1, ?2, ?3, ?3)")
    static let selectDueForwards = SQLiteQuery(
        "SELECT id, body, enqueued_at, attempts, last_error FROM forward_queue WHERE target = ?1 AND due_at <= ?2 ORDER BY id LIMIT ?3")
    static let leaseForward = SQLiteQuery("UPDATE forward_queue SET due_at = ?2, attempts = attempts + 1 WHERE id = ?1")
    static let deleteForward = SQLiteQuery("DELETE FROM forward_queue WHERE id = ?1")
    static let retryForward = SQLiteQuery("UPDATE forward_queue SET due_at = ?2, last_error = ?3 WHERE id = ?1")
    static let selectForwardStatus = SQLiteQuery(
        "SELECT COUNT(*), MIN(enqueued_at), MIN(due_at) FROM forward_queue WHERE target = ?1")
    static let selectKey = SQLiteQuery("SELECT 1 FROM dedupe_keys WHERE key = ?1")
    static let selectUndeliveredSequencesByInput = SQLiteQuery("SELECT seq FROM outbox WHERE input_key = ?1 AND delivered_at IS NULL")
    static let insertKey = SQLiteQuery("INSERT OR IGNORE INTO dedupe_keys (key, seen_at) VALUES (?1, ?2)")
    static let insertEvent = SQLiteQuery("INSERT INTO outbox (event_id, event_type, message_key, environment, product_id, payload, created_at, input_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
    static let outboxColumns = "seq, event_id, event_type, message_key, environment, product_id, payload, input_key"
    /// Written so the planner reads the few undelivered rows through the partial index
    /// `outbox_undelivered_input_key` (the plain `WHERE delivered_at IS NULL ORDER BY seq` scanned
    /// the whole outbox, 90 days of history, at every start).
    static let selectUndelivered = SQLiteQuery("""
        SELECT \(outboxColumns) FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE delivered_at IS NULL) ORDER BY seq
        """)
    static let selectUndeliveredByInput = SQLiteQuery("SELECT \(outboxColumns) FROM outbox WHERE input_key = ?1 AND delivered_at IS NULL ORDER BY seq")
    /// By runs of consecutive sequences: a batch's events are one run, so one statement.
    static let deleteEvents = SQLiteQuery("DELETE FROM outbox WHERE seq BETWEEN ?1 AND ?2")
    static let markEvents = SQLiteQuery("UPDATE outbox SET delivered_at = ?3 WHERE seq BETWEEN ?1 AND ?2 AND delivered_at IS NULL")
    static let pruneKeys = SQLiteQuery("DELETE FROM dedupe_keys WHERE key IN (SELECT key FROM dedupe_keys WHERE seen_at < ?1 LIMIT ?2)")
    /// At most ?2 delivered rows older than ?1, found through `outbox_delivered_at`: the cost of a
    /// prune follows what it deletes, not the history kept (a scan of 90 days of events took
    /// seconds at a million purchases, at every process start).
    static let pruneEvents = SQLiteQuery("""
        DELETE FROM outbox WHERE seq IN (
            SELECT seq FROM outbox WHERE delivered_at IS NOT NULL AND delivered_at < ?1 LIMIT ?2)
        """)
    /// Delivery marks commit without fsync (``SQLiteStateStore/markDelivered(_:at:)``).
    static let relaxSync = SQLiteQuery("PRAGMA synchronous=NORMAL")
    static let fullSync = SQLiteQuery("PRAGMA synchronous=FULL")

    /// Binds a snapshot to ``upsertSubscription`` or, with `keepingIndexedColumns`, to
    /// ``updateSubscriptionKeepingIndexes`` (whose SQL has no parameters for those columns).
    static func bind(
        _ snapshot: SubscriptionSnapshot, to statement: SQLiteStatement, keepingIndexedColumns: Bool = false
    ) throws(SQLiteError) {
        try statement.bind(1, snapshot.originalTransactionId)
        try statement.bind(2, snapshot.state.rawValue)
        try statement.bind(3, snapshot.entitled)
        try statement.bind(4, snapshot.transactionId)
        try statement.bind(5, snapshot.productId)
        try statement.bind(6, snapshot.productType)
        try statement.bind(7, snapshot.bundleId)
        try statement.bind(8, snapshot.environment)
        if !keepingIndexedColumns { try statement.bind(9, snapshot.appAccountToken?.description) }
        try statement.bind(10, snapshot.ownership)
        try statement.bind(11, snapshot.purchaseDate)
        try statement.bind(12, snapshot.expiresDate)
        try statement.bind(13, snapshot.transactionSignedDate)
        try statement.bind(14, snapshot.revocationDate)
        try statement.bind(15, snapshot.revocationReason)
        try statement.bind(16, snapshot.revocationType)
        try statement.bind(17, snapshot.autoRenewEnabled)
        try statement.bind(18, snapshot.autoRenewProductId)
        try statement.bind(19, snapshot.isInBillingRetryPeriod)
        try statement.bind(20, snapshot.gracePeriodExpiresDate)
        try statement.bind(21, snapshot.expirationIntent)
        try statement.bind(22, snapshot.renewalSignedDate)
        try statement.bind(23, snapshot.evaluatedAt)
        try statement.bind(24, snapshot.lastNotificationType)
        try statement.bind(25, snapshot.lastSubtype)
        try statement.bind(26, snapshot.lastNotificationUUID)
        try statement.bind(27, snapshot.expiresDateSource)
        try statement.bind(28, snapshot.renewalDate)
        if !keepingIndexedColumns { try statement.bind(29, snapshot.nextBoundary) }
        try statement.bind(30, snapshot.subscriptionGroupIdentifier)
        try statement.bind(31, snapshot.revocationPercentage)
        try statement.bind(32, snapshot.previousOriginalTransactionId)
        try statement.bind(33, snapshot.migratedToOriginalTransactionId)
        try statement.bind(34, snapshot.appTransactionId)
        try statement.bind(35, snapshot.recentSubscriptionStartDate)
    }

    /// Reads a row selected with ``outboxColumns``.
    static func outboxEntry(from row: SQLiteStatement) -> OutboxEntry {
        OutboxEntry(
            sequence: row.int64(0) ?? 0, eventId: row.string(1) ?? "", eventType: row.string(2) ?? "",
            key: row.string(3) ?? "", environment: row.string(4), productId: row.string(5), payload: row.bytes(6),
            inputKey: row.string(7))
    }

    /// Reads a row selected with ``subscriptionColumns``.
    static func snapshot(from row: SQLiteStatement) -> SubscriptionSnapshot {
        var snapshot = SubscriptionSnapshot(
            originalTransactionId: row.string(0) ?? "",
            // A state written by a newer Signet reads as expired rather than failing the query.
            state: row.string(1).flatMap(SubscriptionState.init(rawValue:)) ?? .expired,
            entitled: row.bool(2) ?? false,
            evaluatedAt: row.int64(22) ?? 0)
        snapshot.transactionId = row.string(3)
        snapshot.productId = row.string(4)
        snapshot.productType = row.string(5)
        snapshot.bundleId = row.string(6)
        snapshot.environment = row.string(7)
        snapshot.appAccountToken = row.string(8).flatMap { AppAccountToken($0) }
        snapshot.ownership = row.string(9)
        snapshot.purchaseDate = row.int64(10)
        snapshot.expiresDate = row.int64(11)
        snapshot.transactionSignedDate = row.int64(12)
        snapshot.revocationDate = row.int64(13)
        snapshot.revocationReason = row.int64(14)
        snapshot.revocationType = row.string(15)
        snapshot.autoRenewEnabled = row.bool(16)
        snapshot.autoRenewProductId = row.string(17)
        snapshot.isInBillingRetryPeriod = row.bool(18)
        snapshot.gracePeriodExpiresDate = row.int64(19)
        snapshot.expirationIntent = row.int64(20)
        snapshot.renewalSignedDate = row.int64(21)
        snapshot.lastNotificationType = row.string(23)
        snapshot.lastSubtype = row.string(24)
        snapshot.lastNotificationUUID = row.string(25)
        snapshot.expiresDateSource = row.string(26)
        snapshot.renewalDate = row.int64(27)
        snapshot.subscriptionGroupIdentifier = row.string(29)
        snapshot.revocationPercentage = row.int64(30)
        snapshot.previousOriginalTransactionId = row.string(31)
        snapshot.migratedToOriginalTransactionId = row.string(32)
        snapshot.appTransactionId = row.string(33)
        snapshot.recentSubscriptionStartDate = row.int64(34)
        return snapshot
    }
}
