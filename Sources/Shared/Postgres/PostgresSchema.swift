import StoreCore

/// Versioned schema migrations, applied in order on start. `schema_migrations` records each one
/// applied; the whole run holds a session advisory lock (`pg_advisory_lock`), so that several
/// processes starting at once apply each migration exactly once, and each migration runs in its own
/// transaction (PostgreSQL's DDL is transactional). Never edit a shipped migration: append one.
///
/// The tables are those of `Tables` (which documents what each holds), in PostgreSQL's types:
/// identity keys, `boolean`, `bytea` sketches, and `numeric` tag numbers. The busiest tables
/// (devices, their tags, reports) have no foreign keys: PostgreSQL checks each with a trigger per
/// inserted row, a third of a registration's cost, while Herald writes those rows only with ids it
/// has just read or returned, and never deletes a device or an application.
enum PostgresSchema: SchemaDialect {
    /// The advisory lock key migrations hold: "HERALD" in ASCII.
    static let lockKey: Int64 = 0x48_45_52_41_4C_44

    static let migrations: [String] = [
        // 1: everything the SQLite backend has after its fifth migration.
        """
        \(create(Tables.applications))
        \(create(Tables.devices))
        CREATE INDEX devices_by_token ON devices (app_id, left(push_token, 16)) WHERE push_token IS NOT NULL;
        CREATE INDEX devices_by_user ON devices (app_id, user_id, updated_at) WHERE user_id IS NOT NULL;
        \(create(Tables.users))
        \(create(Tables.tagDefinitions))
        -- Targeting walks a shard's devices in id order and looks each tag up by primary key; the
        -- value indexes let the planner start from the tag side when a condition is selective.
        \(create(Tables.deviceTags))
        CREATE INDEX device_tags_by_number ON device_tags (app_id, name, num) WHERE num IS NOT NULL;
        \(create(Tables.deviceTagItems))
        CREATE INDEX device_tag_items_by_item ON device_tag_items (app_id, name, item);
        \(create(Tables.reports.adding([ColumnShape("occurred_at", .int64, "NOT NULL")])))
        CREATE INDEX reports_unprocessed ON reports (id) WHERE processed_at IS NULL;
        CREATE INDEX reports_by_hash ON reports (hash, kind) WHERE hash IS NOT NULL;
        CREATE INDEX reports_by_time ON reports (app_id, kind, occurred_at, name);
        \(create(Tables.messages.adding([ColumnShape("hash", .text, "NOT NULL UNIQUE"), ColumnShape("send_rate", .int32)])))
        CREATE UNIQUE INDEX messages_by_transaction ON messages (app_id, transaction_id) WHERE transaction_id IS NOT NULL;
        CREATE INDEX messages_due ON messages (status, send_at);
        \(create(Tables.messageShards.adding(Tables.shardRetries)))
        CREATE INDEX message_shards_ready ON message_shards (status, due_at);
        CREATE INDEX message_shards_by_message ON message_shards (message_id, status);
        \(create(Tables.deliveries))
        CREATE INDEX deliveries_sent_by_device ON deliveries (device_id, created_at) WHERE status = 'sent';
        \(create(Tables.messageErrors))
        \(create(Tables.deliveryRetries))
        CREATE INDEX delivery_retries_due ON delivery_retries (shard_id, next_at);
        \(Tables.rollups.map(create).joined(separator: "\n"))
        """,
        // 2: SQLite's sixth and seventh: which ingest dispatches (several may serve one database,
        // one dispatches at a time), and when a finished message's delivery rows were deleted.
        """
        \(create(Tables.dispatcherLease))
        ALTER TABLE messages ADD COLUMN pruned_at bigint;
        """,
        // 3: SQLite's eighth: transaction ids deduplicate within `NewMessage.transactionWindow` only.
        transactionWindowStep,
        // 4: SQLite's ninth: rich media pages (the zip as bytea), in-apps and their triggers.
        inAppsStep,
        // 5: SQLite's tenth: bulkSetTags jobs and their entry errors.
        bulkTagJobsStep,
        // 6: targeting reads every tag condition on the primary key (per device then, by window of
        // device ids since: see `PostgresTargetFilter`), so the number index only cost each
        // registration one more index entry.
        """
        DROP INDEX device_tags_by_number;
        """,
        // 7: SQLite's eleventh: the message inbox.
        inboxEntriesStep,
        // 8: SQLite's twelfth: the opt-in history, one row per change of a device's permission state,
        // written by a trigger (so the batched registrations record it too).
        """
        \(create(Tables.permissionChanges))
        CREATE INDEX permission_changes_by_app ON permission_changes (app_id, at);
        INSERT INTO permission_changes (app_id, device_id, at, app_version, opted_in, registered)
          SELECT app_id, id, created_at, app_version,
            push_token IS NOT NULL AND subscribed AND coalesce(notification_types, 1) <> 0, true FROM devices;
        CREATE FUNCTION permission_change() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          now_in boolean := NEW.push_token IS NOT NULL AND NEW.subscribed AND coalesce(NEW.notification_types, 1) <> 0;
        BEGIN
          IF TG_OP = 'INSERT' OR now_in IS DISTINCT FROM
             (OLD.push_token IS NOT NULL AND OLD.subscribed AND coalesce(OLD.notification_types, 1) <> 0) THEN
            INSERT INTO permission_changes (app_id, device_id, at, app_version, opted_in, registered)
            VALUES (NEW.app_id, NEW.id, NEW.updated_at, NEW.app_version, now_in, TG_OP = 'INSERT');
          END IF;
          RETURN NULL;
        END $$;
        CREATE TRIGGER permission_changed AFTER INSERT OR UPDATE OF push_token, subscribed, notification_types ON devices
          FOR EACH ROW EXECUTE FUNCTION permission_change();
        """,
        // 9: Live Activity tokens (iOS), as SQLite's migration 13.
        """
        \(create(Tables.liveActivityTokens))
        CREATE UNIQUE INDEX live_activity_tokens_by_device ON live_activity_tokens (device_id, (coalesce(activity_id, '')));
        CREATE INDEX live_activity_tokens_by_activity ON live_activity_tokens (app_id, activity_id);
        """,
        // 10: SQLite's fourteenth: transaction ids by age, for retention.
        transactionsByAgeStep,
        // 11: Live Activities started or updated through the Remote API, as SQLite's migration 15.
        liveActivitiesStep,
        // 12: SQLite's sixteenth: the inbox derived from the delivery rows, only status changes stored.
        """
        \(add(Tables.messageInbox, to: Tables.messages))
        UPDATE messages SET
          inbox_seconds = CASE WHEN request::jsonb -> 'inbox' ->> 'expiresAt' IS NULL
                          THEN coalesce((request::jsonb -> 'inbox' ->> 'days')::bigint, 30) * 86400 END,
          inbox_until = coalesce((request::jsonb -> 'inbox' ->> 'expiresAt')::bigint, 9223372036854775807)
        WHERE jsonb_typeof(request::jsonb -> 'inbox') = 'object';
        CREATE INDEX messages_by_inbox ON messages (app_id, inbox_until) WHERE inbox_until IS NOT NULL;
        CREATE INDEX messages_by_inbox_expiry ON messages (inbox_until) WHERE inbox_until IS NOT NULL;
        \(create(Tables.inboxStatuses))
        INSERT INTO inbox_statuses (message_id, device_id, status) SELECT message_id, device_id, status FROM inbox_entries WHERE status > 1;
        UPDATE messages SET pruned_at = NULL WHERE id IN (
          SELECT e.message_id FROM inbox_entries e WHERE e.expires_at > extract(epoch FROM now()) AND NOT EXISTS (
            SELECT 1 FROM deliveries d WHERE d.message_id = e.message_id AND d.device_id = e.device_id));
        INSERT INTO deliveries (message_id, device_id, status, created_at)
          SELECT message_id, device_id, 'sent', sent_at FROM inbox_entries WHERE expires_at > extract(epoch FROM now())
          ON CONFLICT DO NOTHING;
        DROP TABLE inbox_entries;
        """,
        // 13: the same opt-in history for less: the rows of new devices are written once per
        // statement from its transition table (a batch of registrations inserts many devices in one
        // statement) instead of by one PL/pgSQL call per row, and an update calls its function only
        // when the permission state changed (the trigger's WHEN is checked before any PL/pgSQL runs).
        """
        DROP TRIGGER permission_changed ON devices;
        CREATE OR REPLACE FUNCTION permission_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO permission_changes (app_id, device_id, at, app_version, opted_in, registered)
          VALUES (NEW.app_id, NEW.id, NEW.updated_at, NEW.app_version,
            NEW.push_token IS NOT NULL AND NEW.subscribed AND coalesce(NEW.notification_types, 1) <> 0, false);
          RETURN NULL;
        END $$;
        CREATE TRIGGER permission_changed AFTER UPDATE OF push_token, subscribed, notification_types ON devices
          FOR EACH ROW WHEN ((NEW.push_token IS NOT NULL AND NEW.subscribed AND coalesce(NEW.notification_types, 1) <> 0)
            IS DISTINCT FROM (OLD.push_token IS NOT NULL AND OLD.subscribed AND coalesce(OLD.notification_types, 1) <> 0))
          EXECUTE FUNCTION permission_change();
        CREATE FUNCTION permissions_registered() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO permission_changes (app_id, device_id, at, app_version, opted_in, registered)
          SELECT app_id, id, updated_at, app_version, push_token IS NOT NULL AND subscribed AND coalesce(notification_types, 1) <> 0, true
          FROM registered_devices;
          RETURN NULL;
        END $$;
        -- An INSERT … ON CONFLICT DO UPDATE lists only the rows it inserted here; those it updated
        -- fire permission_changed.
        CREATE TRIGGER permissions_registered AFTER INSERT ON devices REFERENCING NEW TABLE AS registered_devices
          FOR EACH STATEMENT EXECUTE FUNCTION permissions_registered();
        """,
        // 14: SQLite's seventeenth: a browser's Web Push subscription keys.
        webPushKeysStep,
    ]

    /// Integers of 32 bits are `integer`, others `bigint`; a row id is an identity column; a tag's
    /// number is `numeric`, exact past a double's 15 digits (versions encode to 17).
    static func typeName(_ type: ColumnType) -> String {
        switch type {
        case .rowID: "bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        case .int32: "integer"
        case .int64: "bigint"
        case .bool: "boolean"
        case .text: "text"
        case .bytes: "bytea"
        case .double: "double precision"
        case .tagNumber: "numeric"
        }
    }

    static func literal(_ value: Bool) -> String { value ? "true" : "false" }

    static let keyedTableOptions = ""

    static let declaresBusyReferences = false

    /// Runs `body` holding the migration lock, which serializes Herald processes starting at once.
    static func withLock<T>(_ connection: PostgresConnection, _ body: () throws -> T) throws -> T {
        try connection.run("SELECT pg_advisory_lock($1)", [.integer(lockKey)])
        defer { _ = try? connection.run("SELECT pg_advisory_unlock($1)", [.integer(lockKey)]) }
        return try body()
    }

    /// Brings the database up to the newest version; returns the version it found. The caller holds
    /// the lock (`withLock`).
    @discardableResult
    static func migrate(_ connection: PostgresConnection) throws -> Int {
        try connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        let found = Int(try connection.first("SELECT coalesce(max(version), 0) FROM schema_migrations") { $0.int(0) } ?? 0)
        guard found <= migrations.count else {
            throw PostgresError(sqlState: "XX000", message: "the database is at schema version \(found), newer than this Herald (\(migrations.count))",
                                context: "migrating the schema")
        }
        for (offset, sql) in migrations.enumerated() where offset + 1 > found {
            try connection.transaction {
                try connection.execute(sql)
                try connection.run("INSERT INTO schema_migrations (version) VALUES ($1)", [.integer(Int64(offset + 1))])
            }
        }
        return found
    }
}
