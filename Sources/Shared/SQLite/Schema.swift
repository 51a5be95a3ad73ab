import StoreCore

/// Versioned schema migrations, applied in order on start. `PRAGMA user_version` records the last
/// one applied; each runs in its own `BEGIN IMMEDIATE` transaction, so several processes starting
/// at once apply each migration exactly once. Never edit a shipped migration: append a new one.
/// The tables are those of `Tables`, where what each holds is documented.
enum Schema: SchemaDialect {
    static let migrations: [String] = [
        // 1: applications, devices, users, typed tags, raw SDK reports, message outbox.
        """
        \(create(Tables.applications))
        \(create(Tables.devices))
        -- Tokens run to 150+ characters (FCM); their first 16 find a device just as well and keep
        -- the index small (it is written on every registration).
        CREATE INDEX devices_by_token ON devices (app_id, substr(push_token, 1, 16)) WHERE push_token IS NOT NULL;
        CREATE INDEX devices_by_user ON devices (app_id, user_id) WHERE user_id IS NOT NULL;
        \(create(Tables.users))
        \(create(Tables.tagDefinitions))
        \(create(Tables.deviceTags))
        \(create(Tables.deviceTagItems))
        CREATE INDEX device_tag_items_by_item ON device_tag_items (app_id, name, item);
        \(create(Tables.reports))
        CREATE INDEX reports_unprocessed ON reports (id) WHERE processed_at IS NULL;
        \(create(Tables.messages))
        CREATE UNIQUE INDEX messages_by_transaction ON messages (app_id, transaction_id) WHERE transaction_id IS NOT NULL;
        CREATE INDEX messages_due ON messages (status, send_at);
        """,
        // 2: campaign pipeline: shards with leases, one delivery row per (message, device),
        // failure reasons per message, report lookup by payload hash.
        """
        ALTER TABLE messages ADD COLUMN hash TEXT;
        ALTER TABLE messages ADD COLUMN send_rate INTEGER;
        CREATE UNIQUE INDEX messages_by_hash ON messages (hash);
        \(create(Tables.messageShards))
        CREATE INDEX message_shards_ready ON message_shards (status, due_at);
        CREATE INDEX message_shards_by_message ON message_shards (message_id, status);
        \(create(Tables.deliveries))
        CREATE INDEX deliveries_sent_by_device ON deliveries (device_id, created_at) WHERE status = 'sent';
        \(create(Tables.messageErrors))
        CREATE INDEX reports_by_hash ON reports (hash, kind) WHERE hash IS NOT NULL;
        """,
        // 3: event statistics by time window: when a report happened (the SDK's timestampUTC, or
        // when Herald received it), indexed with the event name.
        """
        ALTER TABLE reports ADD COLUMN occurred_at INTEGER;
        UPDATE reports SET occurred_at = coalesce(timestamp_utc, received_at);
        CREATE INDEX reports_by_time ON reports (app_id, kind, occurred_at, name);
        """,
        // 4: analytics rollups, written by workers. `report_facts` is the one place that reads a
        // report's attributes (iOS sends numbers as strings, Android as numbers: both cast to REAL);
        // workers fold processed reports into per-day tables, and readers add the reports not yet
        // processed from the same view. Day = UTC day number of `occurred_at`.
        """
        CREATE VIEW report_facts AS SELECT
            id, app_id, kind, name, hwid, hash, processed_at, occurred_at,
            (occurred_at - ((occurred_at % 86400) + 86400) % 86400) / 86400 AS day,
            CASE WHEN kind = 'event' AND name = 'PW_ScreenOpen'
                 THEN json_extract(body, '$.attributes.screen_name') END AS screen,
            CASE WHEN kind = 'event' AND name IN ('PW_UserIdle', 'PW_ApplicationExit')
                 THEN CAST(json_extract(body, '$.attributes.session_duration') AS REAL) END AS session_duration,
            CASE WHEN kind = 'event' AND name = 'PW_UserIdle'
                 THEN CAST(json_extract(body, '$.attributes.idle_seconds') AS REAL) END AS idle_seconds,
            (kind = 'event' AND name = 'PW_InAppPurchase') OR kind = 'purchase' AS is_purchase,
            coalesce(json_extract(body, '$.attributes.__currency'), json_extract(body, '$.attributes.currency'),
                     json_extract(body, '$.currency'), '') AS currency,
            coalesce(CAST(json_extract(body, '$.attributes.__amount') AS REAL),
                     CAST(json_extract(body, '$.attributes.amount') AS REAL),
                     CAST(json_extract(body, '$.price') AS REAL) * coalesce(CAST(json_extract(body, '$.quantity') AS REAL), 1),
                     0) AS amount
        FROM reports;
        \(Tables.rollups.map(create).joined(separator: "\n"))
        """,
        // 5: durable retries. A push that failed for a transient reason keeps its `deliveries` row
        // with status 'retrying' (so that no pass targets the device again) and waits here for its
        // next attempt; `sending` marks retries on the network, `ambiguous` counts attempts whose
        // outcome was unknown. Shards count pushes waiting and ambiguous ones, and remember the
        // highest device id handed to a provider.
        """
        \(add(Tables.shardRetries, to: Tables.messageShards))
        \(create(Tables.deliveryRetries))
        CREATE INDEX delivery_retries_due ON delivery_retries (shard_id, next_at);
        """,
        // 6: which ingest dispatches (several may serve one database; one dispatches at a time).
        """
        \(create(Tables.dispatcherLease))
        """,
        // 7: retention: when a finished message's delivery rows were deleted.
        """
        ALTER TABLE messages ADD COLUMN pruned_at INTEGER;
        """,
        // 8: transaction ids deduplicate for `NewMessage.transactionWindow` only.
        transactionWindowStep,
        // 9: rich media pages (the uploaded zip itself, so that a backup or another host has it
        // too), in-apps that show them, and the events that trigger in-apps.
        inAppsStep,
        // 10: bulkSetTags jobs and their entry errors.
        bulkTagJobsStep,
        // 11: the message inbox: one copy of an inbox message per device its push was sent to.
        inboxEntriesStep,
        // 12: the opt-in history (the push primer's analytics): one row per change of a device's
        // permission state, written by triggers so that every registration path records it and a
        // repeated registration records nothing. Opted in: a push token, subscribed, and a
        // `notificationTypes` that is not 0 (absent counts as granted). Existing devices start it.
        """
        \(create(Tables.permissionChanges))
        CREATE INDEX permission_changes_by_app ON permission_changes (app_id, at);
        INSERT INTO permission_changes (app_id, device_id, at, app_version, opted_in, registered)
          SELECT app_id, id, created_at, app_version,
            push_token IS NOT NULL AND subscribed = 1 AND coalesce(notification_types, 1) <> 0, 1 FROM devices;
        CREATE TRIGGER permission_registered AFTER INSERT ON devices BEGIN
          INSERT INTO permission_changes (app_id, device_id, at, app_version, opted_in, registered)
          VALUES (NEW.app_id, NEW.id, NEW.updated_at, NEW.app_version,
            NEW.push_token IS NOT NULL AND NEW.subscribed = 1 AND coalesce(NEW.notification_types, 1) <> 0, 1);
        END;
        CREATE TRIGGER permission_changed AFTER UPDATE OF push_token, subscribed, notification_types ON devices
        WHEN (NEW.push_token IS NOT NULL AND NEW.subscribed = 1 AND coalesce(NEW.notification_types, 1) <> 0)
          IS NOT (OLD.push_token IS NOT NULL AND OLD.subscribed = 1 AND coalesce(OLD.notification_types, 1) <> 0)
        BEGIN
          INSERT INTO permission_changes (app_id, device_id, at, app_version, opted_in, registered)
          VALUES (NEW.app_id, NEW.id, NEW.updated_at, NEW.app_version,
            NEW.push_token IS NOT NULL AND NEW.subscribed = 1 AND coalesce(NEW.notification_types, 1) <> 0, 0);
        END;
        """,
        // 13: Live Activity tokens (iOS), one per device and activity; `activity_id` NULL is the
        // device's push-to-start token. `active` turns 0 when the activity ends; `last_timestamp` is
        // the `aps.timestamp` last sent through the token (APNs drops pushes not newer than it).
        """
        \(create(Tables.liveActivityTokens))
        CREATE UNIQUE INDEX live_activity_tokens_by_device ON live_activity_tokens (device_id, coalesce(activity_id, ''));
        CREATE INDEX live_activity_tokens_by_activity ON live_activity_tokens (app_id, activity_id);
        """,
        // 14: retention finds transaction ids past their window by age.
        transactionsByAgeStep,
        // 15: Live Activities started or updated through the Remote API.
        liveActivitiesStep,
        // 16: the inbox is derived from the delivery rows instead of a copy per recipient. A message
        // with inbox options has `inbox_seconds` (how long each recipient keeps it after its push;
        // NULL with a fixed `inbox_date`) and `inbox_until` (the date; with days 2^63-1 while the
        // message sends, then a bound past its last copy's expiry, set by `pruneInbox`; NULL once its
        // inbox is over). Only the SDK's status changes (2 read, 3 opened, 4 deleted) are rows.
        // Existing copies keep their status, and their delivery rows come back where retention had
        // deleted them (their message is pruned again once its inbox is over).
        """
        \(add(Tables.messageInbox, to: Tables.messages))
        UPDATE messages SET
          inbox_seconds = CASE WHEN json_extract(request, '$.inbox.expiresAt') IS NULL
                          THEN coalesce(json_extract(request, '$.inbox.days'), 30) * 86400 END,
          inbox_until = coalesce(json_extract(request, '$.inbox.expiresAt'), 9223372036854775807)
        WHERE json_type(request, '$.inbox') = 'object';
        CREATE INDEX messages_by_inbox ON messages (app_id, inbox_until) WHERE inbox_until IS NOT NULL;
        CREATE INDEX messages_by_inbox_expiry ON messages (inbox_until) WHERE inbox_until IS NOT NULL;
        \(create(Tables.inboxStatuses))
        INSERT INTO inbox_statuses (message_id, device_id, status) SELECT message_id, device_id, status FROM inbox_entries WHERE status > 1;
        UPDATE messages SET pruned_at = NULL WHERE id IN (
          SELECT e.message_id FROM inbox_entries e WHERE e.expires_at > CAST(strftime('%s', 'now') AS INTEGER) AND NOT EXISTS (
            SELECT 1 FROM deliveries d WHERE d.message_id = e.message_id AND d.device_id = e.device_id));
        INSERT OR IGNORE INTO deliveries (message_id, device_id, status, created_at)
          SELECT message_id, device_id, 'sent', sent_at FROM inbox_entries WHERE expires_at > CAST(strftime('%s', 'now') AS INTEGER);
        DROP TABLE inbox_entries;
        """,
        // 17: a browser's Web Push subscription keys.
        webPushKeysStep,
        // 18: the opt-in history keyed by what it is read by (application, time), so that a
        // registration writes one B-tree for it instead of a table and an index. `seq` tells apart
        // changes of one device within one second (0 for the first).
        """
        DROP TRIGGER permission_registered;
        DROP TRIGGER permission_changed;
        CREATE TABLE permission_history (
            app_id INTEGER NOT NULL,
            at INTEGER NOT NULL,
            device_id INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            app_version TEXT,
            opted_in INTEGER NOT NULL,
            registered INTEGER NOT NULL,
            PRIMARY KEY (app_id, at, device_id, seq)
        ) WITHOUT ROWID;
        INSERT INTO permission_history (app_id, at, device_id, seq, app_version, opted_in, registered)
          SELECT app_id, at, device_id, row_number() OVER (PARTITION BY app_id, at, device_id ORDER BY id) - 1,
            app_version, opted_in, registered FROM permission_changes;
        DROP TABLE permission_changes;
        ALTER TABLE permission_history RENAME TO permission_changes;
        CREATE TRIGGER permission_registered AFTER INSERT ON devices BEGIN
          INSERT INTO permission_changes (app_id, at, device_id, seq, app_version, opted_in, registered)
          VALUES (NEW.app_id, NEW.updated_at, NEW.id,
            (SELECT count(*) FROM permission_changes WHERE app_id = NEW.app_id AND at = NEW.updated_at AND device_id = NEW.id),
            NEW.app_version, NEW.push_token IS NOT NULL AND NEW.subscribed = 1 AND coalesce(NEW.notification_types, 1) <> 0, 1);
        END;
        CREATE TRIGGER permission_changed AFTER UPDATE OF push_token, subscribed, notification_types ON devices
        WHEN (NEW.push_token IS NOT NULL AND NEW.subscribed = 1 AND coalesce(NEW.notification_types, 1) <> 0)
          IS NOT (OLD.push_token IS NOT NULL AND OLD.subscribed = 1 AND coalesce(OLD.notification_types, 1) <> 0)
        BEGIN
          INSERT INTO permission_changes (app_id, at, device_id, seq, app_version, opted_in, registered)
          VALUES (NEW.app_id, NEW.updated_at, NEW.id,
            (SELECT count(*) FROM permission_changes WHERE app_id = NEW.app_id AND at = NEW.updated_at AND device_id = NEW.id),
            NEW.app_version, NEW.push_token IS NOT NULL AND NEW.subscribed = 1 AND coalesce(NEW.notification_types, 1) <> 0, 0);
        END;
        """,
        // 19: a new device's first opt-in row is written by the statements that insert devices
        // (`SQLiteDeviceStore.recordNew`), a batch's in one INSERT; later changes stay with the trigger.
        "DROP TRIGGER permission_registered;",
        // 20: a list's items without the reference to their device, as on PostgreSQL. SQLite deletes
        // from a table that declares a foreign key in two passes through a temporary table, which
        // made deleting a list's items cost about three times as much. Device rows are never
        // deleted (deleteDevice anonymizes the row and deletes its items itself), so the cascade
        // never ran, and items are written only for ids just read from devices.
        """
        CREATE TABLE device_tag_items_unreferenced (
            device_id INTEGER NOT NULL,
            name TEXT NOT NULL,
            item TEXT NOT NULL,
            app_id INTEGER NOT NULL,
            PRIMARY KEY (device_id, name, item)
        ) WITHOUT ROWID;
        INSERT INTO device_tag_items_unreferenced (device_id, name, item, app_id)
          SELECT device_id, name, item, app_id FROM device_tag_items;
        DROP TABLE device_tag_items;
        ALTER TABLE device_tag_items_unreferenced RENAME TO device_tag_items;
        CREATE INDEX device_tag_items_by_item ON device_tag_items (app_id, name, item);
        """,
    ]

    /// Every integer is an `INTEGER`; a row id is the table's rowid; a tag's number has no declared
    /// type, so that it keeps integers as integers and decimals as reals.
    static func typeName(_ type: ColumnType) -> String {
        switch type {
        case .rowID: "INTEGER PRIMARY KEY"
        case .int32, .int64, .bool: "INTEGER"
        case .text: "TEXT"
        case .bytes: "BLOB"
        case .double: "REAL"
        case .tagNumber: ""
        }
    }

    static func literal(_ value: Bool) -> String { value ? "1" : "0" }

    /// A table keyed by its values is stored in its key's order, without a rowid.
    static let keyedTableOptions = " WITHOUT ROWID"

    static let declaresBusyReferences = true

    /// Brings the database at `connection` up to the newest version. A database newer than this
    /// code (a rollback without restoring the backup taken before the upgrade) is refused.
    static func migrate(_ connection: SQLiteConnection) throws {
        let found = try connection.prepare("PRAGMA user_version").first { $0.int(0) } ?? 0
        guard found <= migrations.count else {
            throw SQLiteError(code: 1, message: "the database is at schema version \(found), newer than this Herald (\(migrations.count)); "
                + "going back to an older version means restoring a backup taken before the upgrade", context: "migrating the schema")
        }
        for (offset, sql) in migrations.enumerated() {
            let version = offset + 1
            try connection.writeTransaction {
                let current = try connection.prepare("PRAGMA user_version").first { $0.int(0) } ?? 0
                guard current < version else { return }
                try connection.execute(sql)
                try connection.execute("PRAGMA user_version = \(version)")
            }
        }
    }
}
