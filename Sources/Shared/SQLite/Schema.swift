/// Versioned schema migrations, applied in order on start. `PRAGMA user_version` records the last
/// one applied; each runs in its own `BEGIN IMMEDIATE` transaction, so several processes starting
/// at once apply each migration exactly once. Never edit a shipped migration: append a new one.
enum Schema {
    static let migrations: [String] = [
        // 1: applications, devices, users, typed tags, raw SDK reports, message outbox.
        """
        CREATE TABLE applications (
            id INTEGER PRIMARY KEY,
            code TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL
        );
        CREATE TABLE devices (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES applications(id),
            hwid TEXT NOT NULL,
            platform INTEGER NOT NULL,
            push_token TEXT,
            gateway TEXT,
            language TEXT,
            timezone_offset INTEGER,
            app_version TEXT,
            os_version TEXT,
            device_model TEXT,
            sdk_version TEXT,
            user_id TEXT,
            subscribed INTEGER NOT NULL DEFAULT 1,
            notification_types INTEGER,
            badge INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            last_open_at INTEGER,
            token_invalid_reason TEXT,
            UNIQUE (app_id, hwid)
        );
        -- Tokens run to 150+ characters (FCM); their first 16 find a device just as well and keep
        -- the index small (it is written on every registration).
        CREATE INDEX devices_by_token ON devices (app_id, substr(push_token, 1, 16)) WHERE push_token IS NOT NULL;
        CREATE INDEX devices_by_user ON devices (app_id, user_id) WHERE user_id IS NOT NULL;
        CREATE TABLE users (
            app_id INTEGER NOT NULL REFERENCES applications(id),
            user_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, user_id)
        ) WITHOUT ROWID;
        CREATE TABLE tag_definitions (
            app_id INTEGER NOT NULL REFERENCES applications(id),
            name TEXT NOT NULL,
            type INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, name)
        ) WITHOUT ROWID;
        -- One row per (device, tag), keyed so that targeting, which walks devices in id order,
        -- finds a device's tag with one primary-key lookup. `num` holds integers, decimals, booleans (0/1), dates (unix
        -- seconds) and versions (encoded to sort numerically); `str` holds strings, versions as
        -- written, and lists as a JSON array (their items are also in device_tag_items).
        CREATE TABLE device_tags (
            device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            app_id INTEGER NOT NULL,
            type INTEGER NOT NULL,
            num,
            str TEXT,
            PRIMARY KEY (device_id, name)
        ) WITHOUT ROWID;
        CREATE TABLE device_tag_items (
            device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            item TEXT NOT NULL,
            app_id INTEGER NOT NULL,
            PRIMARY KEY (device_id, name, item)
        ) WITHOUT ROWID;
        CREATE INDEX device_tag_items_by_item ON device_tag_items (app_id, name, item);
        -- What the SDKs report (postEvent, pushStat, messageDeliveryEvent), kept as received
        -- until the analytics pipeline turns them into counts; `processed_at` marks that.
        CREATE TABLE reports (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES applications(id),
            kind TEXT NOT NULL,
            hwid TEXT NOT NULL,
            user_id TEXT,
            platform INTEGER,
            name TEXT,
            hash TEXT,
            body TEXT NOT NULL,
            timestamp_utc INTEGER,
            timestamp_current INTEGER,
            received_at INTEGER NOT NULL,
            processed_at INTEGER
        );
        CREATE INDEX reports_unprocessed ON reports (id) WHERE processed_at IS NULL;
        -- The outbox: a send request is committed here before it is acknowledged.
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            code TEXT NOT NULL UNIQUE,
            app_id INTEGER NOT NULL REFERENCES applications(id),
            transaction_id TEXT,
            status TEXT NOT NULL,
            request TEXT NOT NULL,
            send_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX messages_by_transaction ON messages (app_id, transaction_id) WHERE transaction_id IS NOT NULL;
        CREATE INDEX messages_due ON messages (status, send_at);
        """,
        // 2: campaign pipeline: shards with leases, one delivery row per (message, device),
        // failure reasons per message, report lookup by payload hash.
        """
        ALTER TABLE messages ADD COLUMN hash TEXT;
        ALTER TABLE messages ADD COLUMN send_rate INTEGER;
        CREATE UNIQUE INDEX messages_by_hash ON messages (hash);
        CREATE TABLE message_shards (
            id INTEGER PRIMARY KEY,
            message_id INTEGER NOT NULL REFERENCES messages(id),
            first_device INTEGER NOT NULL,
            last_device INTEGER NOT NULL,
            by_timezone INTEGER NOT NULL DEFAULT 0,
            timezone_offset INTEGER,
            due_at INTEGER NOT NULL,
            status TEXT NOT NULL,
            lease_owner TEXT,
            lease_until INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            targeted INTEGER NOT NULL DEFAULT 0,
            sent INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            throttled INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX message_shards_ready ON message_shards (status, due_at);
        CREATE INDEX message_shards_by_message ON message_shards (message_id, status);
        CREATE TABLE deliveries (
            message_id INTEGER NOT NULL,
            device_id INTEGER NOT NULL,
            status TEXT NOT NULL,
            reason TEXT,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (message_id, device_id)
        ) WITHOUT ROWID;
        CREATE INDEX deliveries_sent_by_device ON deliveries (device_id, created_at) WHERE status = 'sent';
        CREATE TABLE message_errors (
            message_id INTEGER NOT NULL,
            reason TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (message_id, reason)
        ) WITHOUT ROWID;
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
        -- Per day and event: how many, and a `DeviceSketch` of the devices that sent it.
        CREATE TABLE event_days (
            app_id INTEGER NOT NULL, day INTEGER NOT NULL, name TEXT NOT NULL, count INTEGER NOT NULL, devices BLOB NOT NULL,
            PRIMARY KEY (app_id, day, name)
        ) WITHOUT ROWID;
        -- Per day: a `DeviceSketch` of the devices that sent any event.
        CREATE TABLE active_days (
            app_id INTEGER NOT NULL, day INTEGER NOT NULL, devices BLOB NOT NULL,
            PRIMARY KEY (app_id, day)
        ) WITHOUT ROWID;
        CREATE TABLE screen_days (
            app_id INTEGER NOT NULL, day INTEGER NOT NULL, screen TEXT NOT NULL, count INTEGER NOT NULL,
            PRIMARY KEY (app_id, day, screen)
        ) WITHOUT ROWID;
        CREATE TABLE session_days (
            app_id INTEGER NOT NULL, day INTEGER NOT NULL,
            sessions INTEGER NOT NULL, duration_sum REAL NOT NULL, idle_count INTEGER NOT NULL, idle_sum REAL NOT NULL,
            PRIMARY KEY (app_id, day)
        ) WITHOUT ROWID;
        CREATE TABLE purchase_days (
            app_id INTEGER NOT NULL, day INTEGER NOT NULL, currency TEXT NOT NULL, count INTEGER NOT NULL, amount REAL NOT NULL,
            PRIMARY KEY (app_id, day, currency)
        ) WITHOUT ROWID;
        -- Delivery and open reports matched to their message by the payload hash, once per device.
        CREATE TABLE message_reports (
            message_id INTEGER NOT NULL, kind TEXT NOT NULL, device_id INTEGER NOT NULL,
            PRIMARY KEY (message_id, kind, device_id)
        ) WITHOUT ROWID;
        """,
        // 5: durable retries. A push that failed for a transient reason keeps its `deliveries` row
        // with status 'retrying' (so that no pass targets the device again) and waits here for its
        // next attempt; `sending` marks retries on the network, `ambiguous` counts attempts whose
        // outcome was unknown. Shards count pushes waiting and ambiguous ones, and remember the
        // highest device id handed to a provider.
        """
        ALTER TABLE message_shards ADD COLUMN retrying INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE message_shards ADD COLUMN ambiguous INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE message_shards ADD COLUMN attempted_through INTEGER;
        CREATE TABLE delivery_retries (
            message_id INTEGER NOT NULL,
            device_id INTEGER NOT NULL,
            shard_id INTEGER NOT NULL,
            attempts INTEGER NOT NULL,
            ambiguous INTEGER NOT NULL DEFAULT 0,
            sending INTEGER NOT NULL DEFAULT 0,
            next_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            reason TEXT NOT NULL,
            PRIMARY KEY (message_id, device_id)
        ) WITHOUT ROWID;
        CREATE INDEX delivery_retries_due ON delivery_retries (shard_id, next_at);
        """,
        // 6: which ingest dispatches (several may serve one database; one dispatches at a time).
        """
        CREATE TABLE dispatcher_lease (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            holder TEXT NOT NULL,
            until INTEGER NOT NULL
        );
        """,
        // 7: retention: when a finished message's delivery rows were deleted.
        """
        ALTER TABLE messages ADD COLUMN pruned_at INTEGER;
        """,
        // 8: transaction ids deduplicate for `NewMessage.transactionWindow` only: one row per (app,
        // id) holds the code of the message it last created and when; a reuse after the window
        // takes the row over. Replaces the unique index that kept an id forever.
        """
        DROP INDEX messages_by_transaction;
        CREATE TABLE message_transactions (
            app_id INTEGER NOT NULL,
            transaction_id TEXT NOT NULL,
            code TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, transaction_id)
        ) WITHOUT ROWID;
        INSERT INTO message_transactions (app_id, transaction_id, code, created_at)
            SELECT app_id, transaction_id, code, created_at FROM messages WHERE transaction_id IS NOT NULL;
        """,
        // 9: rich media pages (the uploaded zip itself, so that a backup or another host has it
        // too), in-apps that show them, and the events that trigger in-apps. `actions` and `shown`
        // count the SDKs' richMediaAction and triggerInAppAction reports.
        """
        CREATE TABLE rich_media_pages (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES applications(id),
            code TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            version INTEGER NOT NULL,
            zip BLOB NOT NULL,
            actions INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            UNIQUE (app_id, code)
        );
        CREATE TABLE in_apps (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES applications(id),
            code TEXT NOT NULL,
            page_id INTEGER NOT NULL REFERENCES rich_media_pages(id),
            layout TEXT NOT NULL,
            close_button_type INTEGER NOT NULL,
            priority INTEGER NOT NULL,
            required INTEGER NOT NULL,
            shown INTEGER NOT NULL DEFAULT 0,
            actions INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            UNIQUE (app_id, code)
        );
        CREATE INDEX in_apps_by_page ON in_apps (page_id);
        -- `conditions`: a JSON array of [attribute, operator, operand].
        CREATE TABLE in_app_triggers (
            in_app_id INTEGER NOT NULL REFERENCES in_apps(id),
            position INTEGER NOT NULL,
            app_id INTEGER NOT NULL,
            event TEXT NOT NULL,
            conditions TEXT NOT NULL,
            PRIMARY KEY (in_app_id, position)
        ) WITHOUT ROWID;
        CREATE INDEX in_app_triggers_by_event ON in_app_triggers (app_id, event);
        """,
        // 10: bulkSetTags jobs. `devices` holds the request's entries (JSON) until the job completes;
        // `processed` entries are applied, in order, each chunk in the transaction that advances it;
        // one error row per entry that could not be applied.
        """
        CREATE TABLE bulk_tag_jobs (
            id TEXT PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES applications(id),
            status TEXT NOT NULL,
            create_missing INTEGER NOT NULL,
            devices TEXT NOT NULL,
            total INTEGER NOT NULL,
            processed INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            failure TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX bulk_tag_jobs_unfinished ON bulk_tag_jobs (created_at) WHERE status IN ('Pending', 'Processing');
        CREATE TABLE bulk_tag_errors (
            job_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            field TEXT NOT NULL,
            value TEXT NOT NULL,
            message TEXT NOT NULL,
            PRIMARY KEY (job_id, position)
        ) WITHOUT ROWID;
        """,
        // 11: the message inbox: one copy of an inbox message per device its push was sent to,
        // with the SDK's status (1 delivered, 2 read, 3 opened, 4 deleted) and its expiry.
        """
        CREATE TABLE inbox_entries (
            device_id INTEGER NOT NULL,
            message_id INTEGER NOT NULL,
            status INTEGER NOT NULL,
            sent_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            PRIMARY KEY (device_id, message_id)
        ) WITHOUT ROWID;
        CREATE INDEX inbox_entries_by_expiry ON inbox_entries (expires_at);
        """,
        // 12: the opt-in history (the push primer's analytics): one row per change of a device's
        // permission state, written by triggers so that every registration path records it and a
        // repeated registration records nothing. Opted in: a push token, subscribed, and a
        // `notificationTypes` that is not 0 (absent counts as granted). Existing devices start it.
        """
        CREATE TABLE permission_changes (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL,
            device_id INTEGER NOT NULL,
            at INTEGER NOT NULL,
            app_version TEXT,
            opted_in INTEGER NOT NULL,
            registered INTEGER NOT NULL
        );
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
        CREATE TABLE live_activity_tokens (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL,
            device_id INTEGER NOT NULL,
            activity_id TEXT,
            token TEXT NOT NULL,
            active INTEGER NOT NULL,
            last_timestamp INTEGER,
            updated_at INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX live_activity_tokens_by_device ON live_activity_tokens (device_id, coalesce(activity_id, ''));
        CREATE INDEX live_activity_tokens_by_activity ON live_activity_tokens (app_id, activity_id);
        """,
        // 14: retention finds transaction ids past their window by age (`pruneMessageTransactions`).
        """
        CREATE INDEX message_transactions_by_age ON message_transactions (created_at);
        """,
        // 15: Live Activities started or updated through the Remote API: the last `aps.timestamp`
        // given to the activity (the next is newer) and when an end was accepted (NULL: running).
        """
        CREATE TABLE live_activities (
            app_id INTEGER NOT NULL,
            activity_id TEXT NOT NULL,
            last_timestamp INTEGER NOT NULL,
            ended_at INTEGER,
            PRIMARY KEY (app_id, activity_id)
        ) WITHOUT ROWID;
        """,
        // 16: the inbox is derived from the delivery rows instead of a copy per recipient. A message
        // with inbox options has `inbox_seconds` (how long each recipient keeps it after its push;
        // NULL with a fixed `inbox_date`) and `inbox_until` (the date; with days 2^63-1 while the
        // message sends, then a bound past its last copy's expiry, set by `pruneInbox`; NULL once its
        // inbox is over). Only the SDK's status changes (2 read, 3 opened, 4 deleted) are rows.
        // Existing copies keep their status, and their delivery rows come back where retention had
        // deleted them (their message is pruned again once its inbox is over).
        """
        ALTER TABLE messages ADD COLUMN inbox_until INTEGER;
        ALTER TABLE messages ADD COLUMN inbox_seconds INTEGER;
        UPDATE messages SET
          inbox_seconds = CASE WHEN json_extract(request, '$.inbox.expiresAt') IS NULL
                          THEN coalesce(json_extract(request, '$.inbox.days'), 30) * 86400 END,
          inbox_until = coalesce(json_extract(request, '$.inbox.expiresAt'), 9223372036854775807)
        WHERE json_type(request, '$.inbox') = 'object';
        CREATE INDEX messages_by_inbox ON messages (app_id, inbox_until) WHERE inbox_until IS NOT NULL;
        CREATE INDEX messages_by_inbox_expiry ON messages (inbox_until) WHERE inbox_until IS NOT NULL;
        CREATE TABLE inbox_statuses (
            message_id INTEGER NOT NULL,
            device_id INTEGER NOT NULL,
            status INTEGER NOT NULL,
            PRIMARY KEY (message_id, device_id)
        ) WITHOUT ROWID;
        INSERT INTO inbox_statuses (message_id, device_id, status) SELECT message_id, device_id, status FROM inbox_entries WHERE status > 1;
        UPDATE messages SET pruned_at = NULL WHERE id IN (
          SELECT e.message_id FROM inbox_entries e WHERE e.expires_at > CAST(strftime('%s', 'now') AS INTEGER) AND NOT EXISTS (
            SELECT 1 FROM deliveries d WHERE d.message_id = e.message_id AND d.device_id = e.device_id));
        INSERT OR IGNORE INTO deliveries (message_id, device_id, status, created_at)
          SELECT message_id, device_id, 'sent', sent_at FROM inbox_entries WHERE expires_at > CAST(strftime('%s', 'now') AS INTEGER);
        DROP TABLE inbox_entries;
        """,
        // 17: a browser's Web Push subscription keys, as registerDevice gives them (base64): the
        // user agent's P-256 public key and the authentication secret. NULL for other devices.
        """
        ALTER TABLE devices ADD COLUMN web_p256dh TEXT;
        ALTER TABLE devices ADD COLUMN web_auth TEXT;
        """,
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
    ]

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
