import PostgresNIO

/// The versioned schema of ``PostgresStateStore``: numbered migrations, each applied once,
/// in order, recorded in `signet_schema_migrations`.
///
/// Applied at every start and by `signet migrate`. Several instances starting at once
/// serialise on a session advisory lock, so each migration runs exactly once; a second
/// run finds every version recorded and does nothing (idempotent). A migration is never
/// edited once released: changes come as a new version. docs/postgres.md documents the
/// schema, and `signet_entitlements` is the stable interface for app backends.
public enum PostgresMigrations {
    /// One migration: its version and its statements (run in one transaction).
    public struct Migration: Sendable {
        public var version: Int
        public var summary: String
        public var statements: [String]
    }

    /// `pg_advisory_lock` key held while migrating ("signet" in ASCII, so it does not
    /// collide with an application's small integers).
    static let lockKey: Int64 = 0x7369_676E_6574

    /// Every migration, oldest first.
    public static let all: [Migration] = [
        Migration(version: 1, summary: "subscriptions, dedupe keys, outbox with leases, signet_entitlements view", statements: [
            """
            CREATE TABLE signet_subscriptions (
                original_transaction_id TEXT PRIMARY KEY,
                state TEXT NOT NULL,
                entitled BOOLEAN NOT NULL,
                transaction_id TEXT,
                product_id TEXT,
                product_type TEXT,
                bundle_id TEXT,
                environment TEXT,
                app_account_token TEXT,
                ownership TEXT,
                purchase_date BIGINT,
                expires_date BIGINT,
                transaction_signed_date BIGINT,
                revocation_date BIGINT,
                revocation_reason BIGINT,
                revocation_type TEXT,
                auto_renew BOOLEAN,
                auto_renew_product_id TEXT,
                billing_retry BOOLEAN,
                grace_period_expires_date BIGINT,
                expiration_intent BIGINT,
                renewal_signed_date BIGINT,
                evaluated_at BIGINT NOT NULL,
                last_notification_type TEXT,
                last_subtype TEXT,
                last_notification_uuid TEXT,
                expires_date_source TEXT,
                renewal_date BIGINT,
                next_boundary BIGINT,
                version BIGINT NOT NULL DEFAULT 1,
                updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE INDEX signet_subscriptions_app_account_token
                ON signet_subscriptions (app_account_token) WHERE app_account_token IS NOT NULL
            """,
            """
            CREATE INDEX signet_subscriptions_next_boundary
                ON signet_subscriptions (next_boundary) WHERE next_boundary IS NOT NULL
            """,
            "CREATE TABLE signet_dedupe_keys (key TEXT PRIMARY KEY, seen_at BIGINT NOT NULL)",
            "CREATE INDEX signet_dedupe_keys_seen_at ON signet_dedupe_keys (seen_at)",
            """
            CREATE TABLE signet_instances (
                id TEXT PRIMARY KEY,
                lease_expires_at TIMESTAMPTZ NOT NULL,
                started_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE TABLE signet_outbox (
                seq BIGSERIAL PRIMARY KEY,
                event_id TEXT NOT NULL,
                event_type TEXT NOT NULL,
                message_key TEXT NOT NULL,
                environment TEXT,
                product_id TEXT,
                payload BYTEA NOT NULL,
                created_at BIGINT NOT NULL,
                delivered_at BIGINT,
                input_key TEXT,
                owner TEXT
            )
            """,
            "CREATE INDEX signet_outbox_undelivered_input_key ON signet_outbox (input_key) WHERE delivered_at IS NULL",
            "CREATE INDEX signet_outbox_undelivered ON signet_outbox (seq) WHERE delivered_at IS NULL",
            // The read-only interface for app backends.
            entitlementsView(creating: "CREATE VIEW", appending: []),
        ]),
        Migration(version: 2, summary: "entitlement names (signet_entitlement_names, subscription_group_id, signet_entitlements.entitlements), purchase history index", statements: [
            "ALTER TABLE signet_subscriptions ADD COLUMN subscription_group_id TEXT",
            // A store's `entitlements:` mapping, one row per (name, product or group id); the
            // pipeline that configures it replaces the rows when it opens the store.
            """
            CREATE TABLE signet_entitlement_names (
                entitlement TEXT NOT NULL,
                granted_by TEXT NOT NULL,
                PRIMARY KEY (entitlement, granted_by)
            )
            """,
            "CREATE INDEX signet_entitlement_names_granted_by ON signet_entitlement_names (granted_by)",
            // A purchase's history (`signet state history`): its kept outbox rows in order.
            "CREATE INDEX signet_outbox_message_key ON signet_outbox (message_key, seq)",
            // Pruning kept rows (outbox_retention) without reading the whole outbox every minute.
            "CREATE INDEX signet_outbox_delivered_at ON signet_outbox (delivered_at) WHERE delivered_at IS NOT NULL",
            // Version 1's view with two columns appended (a view only ever gains columns).
            entitlementsView(creating: "CREATE OR REPLACE VIEW", appending: ["s.subscription_group_id", entitlementNamesColumn]),
        ]),
        Migration(version: 3, summary: "App Store Server API rate budgets shared by every instance (signet_rate_budgets)", statements: [
            // One row per (app, environment, endpoint class); times are microseconds of the
            // database's clock, so the instances' own clocks need not agree.
            """
            CREATE TABLE signet_rate_budgets (
                bucket TEXT PRIMARY KEY,
                next_slot_us BIGINT NOT NULL,
                interval_us BIGINT NOT NULL,
                paused_until_us BIGINT NOT NULL
            )
            """,
        ]),
        Migration(version: 4, summary: "revocation_percentage (REFUND_PRORATED's share, milliunits)", statements: [
            "ALTER TABLE signet_subscriptions ADD COLUMN revocation_percentage BIGINT",
        ]),
        Migration(version: 5, summary: "migrated purchases linked both ways (MIGRATION), appTransactionId", statements: [
            """
            ALTER TABLE signet_subscriptions ADD COLUMN previous_original_transaction_id TEXT,
                ADD COLUMN migrated_to_original_transaction_id TEXT, ADD COLUMN app_transaction_id TEXT
            """,
            entitlementsView(creating: "CREATE OR REPLACE VIEW", appending: [
                "s.subscription_group_id", entitlementNamesColumn,
                "s.previous_original_transaction_id", "s.migrated_to_original_transaction_id",
            ]),
        ]),
        Migration(version: 6, summary: "consent restrictions (RESCIND_CONSENT) and the view's restricted column", statements: [
            """
            CREATE TABLE signet_consent_restrictions (
                app_transaction_id TEXT PRIMARY KEY,
                bundle_id TEXT,
                environment TEXT,
                rescinded_at BIGINT NOT NULL,
                notification_uuid TEXT,
                cleared_at BIGINT,
                cleared_by TEXT
            )
            """,
            "CREATE INDEX signet_subscriptions_app_transaction_id ON signet_subscriptions (app_transaction_id) WHERE app_transaction_id IS NOT NULL",
            entitlementsView(creating: "CREATE OR REPLACE VIEW", appending: [
                "s.subscription_group_id", entitlementNamesColumn,
                "s.previous_original_transaction_id", "s.migrated_to_original_transaction_id",
                """
                EXISTS (
                    SELECT 1 FROM signet_consent_restrictions r
                    WHERE r.app_transaction_id = s.app_transaction_id AND r.cleared_at IS NULL
                ) AS restricted
                """,
            ]),
        ]),
        Migration(version: 7, summary: "refund questions (CONSUMPTION_REQUEST) and the consumption ledger (consent, usage)", statements: [
            """
            CREATE TABLE signet_consumption_requests (
                transaction_id TEXT NOT NULL,
                requested_at BIGINT NOT NULL,
                status TEXT NOT NULL,
                due_at BIGINT,
                record JSONB NOT NULL,
                PRIMARY KEY (transaction_id, requested_at)
            )
            """,
            "CREATE INDEX signet_consumption_requests_due ON signet_consumption_requests (due_at) WHERE due_at IS NOT NULL",
            "CREATE INDEX signet_consumption_requests_requested_at ON signet_consumption_requests (requested_at)",
            "CREATE TABLE signet_consumption_ledger (key TEXT PRIMARY KEY, record JSONB NOT NULL)",
        ]),
        Migration(version: 8, summary: "the forward sink's durable queue (signet_forward_queue)", statements: [
            """
            CREATE TABLE signet_forward_queue (
                id BIGSERIAL PRIMARY KEY,
                target TEXT NOT NULL,
                body BYTEA NOT NULL,
                enqueued_at BIGINT NOT NULL,
                due_at BIGINT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT
            )
            """,
            "CREATE INDEX signet_forward_queue_due ON signet_forward_queue (target, due_at)",
        ]),
        // Apple types appAccountToken as a UUID; earlier versions compared it as text, so a
        // token written in upper case (Swift's uuidString) named another customer. Stored
        // tokens become the canonical lower-case form; two spellings of one customer's consent
        // merge into the entry that decides (the newest; at the same instant a withdrawal).
        Migration(version: 9, summary: "appAccountToken in its canonical lower-case form (subscriptions, refund questions, consent ledger)", statements: [
            "UPDATE signet_subscriptions SET app_account_token = lower(app_account_token) WHERE app_account_token <> lower(app_account_token)",
            """
            UPDATE signet_consumption_requests
            SET record = jsonb_set(record, '{appAccountToken}', to_jsonb(lower(record->>'appAccountToken')))
            WHERE record->>'appAccountToken' <> lower(record->>'appAccountToken')
            """,
            // Anything but a UUID (an empty string Apple's payload carried) is dropped: read back
            // typed, it would fail the whole listing.
            """
            UPDATE signet_consumption_requests SET record = record - 'appAccountToken'
            WHERE record ? 'appAccountToken'
              AND NOT (jsonb_typeof(record->'appAccountToken') = 'string'
                       AND record->>'appAccountToken' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
            """,
            """
            INSERT INTO signet_consumption_ledger (key, record)
            SELECT DISTINCT ON (1) 'appAccountToken:' || lower(substr(key, 17)),
                jsonb_set(record, '{appAccountToken}', to_jsonb(lower(substr(key, 17))))
            FROM signet_consumption_ledger
            WHERE key LIKE 'appAccountToken:%' AND key <> 'appAccountToken:' || lower(substr(key, 17))
            ORDER BY 1, (record->>'at')::BIGINT DESC, (record->>'consented')::BOOLEAN ASC
            ON CONFLICT (key) DO UPDATE SET record = EXCLUDED.record
            WHERE (EXCLUDED.record->>'at')::BIGINT > (signet_consumption_ledger.record->>'at')::BIGINT
                OR ((EXCLUDED.record->>'at')::BIGINT = (signet_consumption_ledger.record->>'at')::BIGINT
                    AND NOT (EXCLUDED.record->>'consented')::BOOLEAN)
            """,
            "DELETE FROM signet_consumption_ledger WHERE key LIKE 'appAccountToken:%' AND key <> 'appAccountToken:' || lower(substr(key, 17))",
        ]),
        Migration(version: 10, summary: "answers to Apple's retention requests and their outcomes (signet_retention_offers), recent_subscription_start_date (tenure)", statements: [
            "ALTER TABLE signet_subscriptions ADD COLUMN recent_subscription_start_date BIGINT",
            """
            CREATE TABLE signet_retention_offers (
                request_id TEXT PRIMARY KEY,
                original_transaction_id TEXT NOT NULL,
                answered_at BIGINT NOT NULL,
                outcome_at BIGINT,
                record JSONB NOT NULL
            )
            """,
            "CREATE INDEX signet_retention_offers_purchase ON signet_retention_offers (original_transaction_id, answered_at)",
            "CREATE INDEX signet_retention_offers_answered_at ON signet_retention_offers (answered_at)",
        ]),
        Migration(version: 11, summary: "refund questions found by purchase (the retention policy's refund_requested)", statements: [
            "CREATE INDEX signet_consumption_requests_purchase ON signet_consumption_requests ((record->>'originalTransactionId'))",
        ]),
        Migration(version: 12, summary: "the audit log of operator actions taken through Apple (signet_support_audit)", statements: [
            """
            CREATE TABLE signet_support_audit (
                request_id TEXT PRIMARY KEY,
                original_transaction_id TEXT,
                at BIGINT NOT NULL,
                record JSONB NOT NULL
            )
            """,
            "CREATE INDEX signet_support_audit_purchase ON signet_support_audit (original_transaction_id, at) WHERE original_transaction_id IS NOT NULL",
            "CREATE INDEX signet_support_audit_at ON signet_support_audit (at)",
        ]),
    ]

    /// The view's `entitlements` column (version 2): the names the purchase's product or group grants.
    private static let entitlementNamesColumn = """
        ARRAY(
            SELECT DISTINCT e.entitlement FROM signet_entitlement_names e
            WHERE e.granted_by = s.product_id OR e.granted_by = s.subscription_group_id
            ORDER BY e.entitlement
        ) AS entitlements
        """

    /// `signet_entitlements`: state and entitlement as of now() (time-driven changes, a period or
    /// grace period ending, are applied here; what the stored row says otherwise was decided by
    /// the pipeline's policy), with `appending` after version 1's columns: a view only ever
    /// gains columns, at its end, so `CREATE OR REPLACE` keeps every reader's query valid.
    private static func entitlementsView(creating: String, appending: [String]) -> String {
        """
        \(creating) signet_entitlements AS
        SELECT
            s.original_transaction_id,
            s.transaction_id,
            s.app_account_token,
            s.bundle_id,
            s.environment,
            s.product_id,
            s.product_type,
            CASE
                WHEN s.state = 'active' AND s.expires_date IS NOT NULL AND s.expires_date <= n.now_ms THEN 'expired'
                WHEN s.state = 'grace_period' AND s.grace_period_expires_date IS NOT NULL
                    AND s.grace_period_expires_date <= n.now_ms THEN 'billing_retry'
                ELSE s.state
            END AS state,
            CASE
                WHEN s.state = 'active' THEN s.entitled AND (s.expires_date IS NULL OR s.expires_date > n.now_ms)
                WHEN s.state = 'grace_period' THEN s.entitled AND (s.grace_period_expires_date IS NULL
                    OR s.grace_period_expires_date > n.now_ms OR COALESCE(s.expires_date > n.now_ms, FALSE))
                ELSE s.entitled
            END AS entitled,
            to_timestamp(s.expires_date / 1000.0) AS expires_date,
            to_timestamp(s.grace_period_expires_date / 1000.0) AS grace_period_expires_date,
            s.ownership,
            s.auto_renew AS auto_renew_enabled,
            to_timestamp(s.revocation_date / 1000.0) AS revocation_date,
            \((["s.updated_at"] + appending).joined(separator: ",\n    "))
        FROM signet_subscriptions s
        CROSS JOIN (SELECT (extract(epoch FROM now()) * 1000)::BIGINT AS now_ms) n
        """
    }

    /// The newest version this build knows.
    public static var latestVersion: Int { all.last?.version ?? 0 }

    /// Throws unless every migration this build knows was applied: a reader (which never
    /// migrates) of a database an older Signet wrote says what to run instead of failing on a
    /// missing column.
    static func checkCurrent(on session: PostgresSession) throws {
        var version = 0
        if try session.query("SELECT to_regclass('signet_schema_migrations') IS NOT NULL").first?.decode(Bool.self) == true {
            version = try session.query("SELECT COALESCE(max(version), 0) FROM signet_schema_migrations").first?.decode(Int.self) ?? 0
        }
        guard version >= latestVersion else {
            throw PostgresStoreError(
                "the database schema is version \(version), older than this Signet reads (\(latestVersion)); "
                    + "run `signet migrate` (or start `signet run` once) to bring it up to date")
        }
    }

    /// Applies every migration not yet recorded; returns the versions it applied.
    @discardableResult
    static func apply(on session: PostgresSession) throws -> [Int] {
        try session.query("SELECT pg_advisory_lock(\(lockKey))")
        var applied: [Int] = []
        do {
            try session.execute("""
                CREATE TABLE IF NOT EXISTS signet_schema_migrations (
                    version INTEGER PRIMARY KEY,
                    summary TEXT NOT NULL,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """)
            var done: Set<Int> = []
            for row in try session.query("SELECT version FROM signet_schema_migrations") {
                if let version = try? row.decode(Int.self) { done.insert(version) }
            }
            if let newest = done.max(), newest > latestVersion {
                throw PostgresStoreError(
                    "the database schema is version \(newest), newer than this Signet knows (\(latestVersion)); upgrade Signet")
            }
            for migration in all where !done.contains(migration.version) {
                try session.execute("BEGIN")
                do {
                    for statement in migration.statements { try session.execute(statement) }
                    try session.query(
                        "INSERT INTO signet_schema_migrations (version, summary) VALUES (\(migration.version), \(migration.summary))")
                    try session.execute("COMMIT")
                } catch {
                    try? session.execute("ROLLBACK")
                    throw error
                }
                applied.append(migration.version)
            }
        } catch {
            _ = try? session.query("SELECT pg_advisory_unlock(\(lockKey))")
            throw error
        }
        try session.query("SELECT pg_advisory_unlock(\(lockKey))")
        return applied
    }
}
