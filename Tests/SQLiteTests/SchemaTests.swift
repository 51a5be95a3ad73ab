import Foundation
import Testing
import Core
@testable import SQLite
import TestSupport

/// Migrations of an existing SQLite database.
@Suite struct SchemaTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    /// A database at `path` that the first `version` migrations made, with application APP-1 in it.
    static func database(at version: Int, path: String) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        for migration in Schema.migrations.prefix(version) { try connection.execute(migration) }
        try connection.execute("PRAGMA user_version = \(version)")
        try connection.execute("INSERT INTO applications (code, name) VALUES ('APP-1', 'One')")
        return connection
    }

    @Test func anUpgradeKeepsTheTransactionIdsOfEarlierMessagesForTheirDay() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("h.sqlite")
        // A database at version 7, whose unique index kept transaction ids forever.
        let connection = try Self.database(at: 7, path: path)
        try connection.execute("""
            INSERT INTO messages (code, app_id, transaction_id, status, request, send_at, created_at, updated_at, hash)
            SELECT 'AAAA-00000000-00000001', id, 'daily', 'done', '{}', 1000, 1000, 1000, 'h1' FROM applications
            """)
        connection.close()
        let campaigns = SQLiteCampaignStore(database: try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 2000, apps: Self.apps))
        var spec = MessageSpec(content: ["default": "Digest"])
        spec.schedule = MessageSpec.Schedule(sendAt: 0, perDeviceTimezone: false)
        let message = NewMessage(spec: spec, transactionID: "daily")
        #expect(try campaigns.createMessages(app: "APP-1", [message], now: 1_000 + NewMessage.transactionWindow - 1) == ["AAAA-00000000-00000001"])
        #expect(try campaigns.createMessages(app: "APP-1", [message], now: 1_000 + NewMessage.transactionWindow) != ["AAAA-00000000-00000001"])
    }

    @Test func anUpgradeKeepsTheInboxCopiesTheirStatusesAndTheirDeliveryRows() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("h.sqlite")
        let now = Int64(Date().timeIntervalSince1970)
        // A database at version 15, with one copy per device of a message kept 30 days: device 1
        // opened it, and retention had already deleted the message's delivery rows.
        let connection = try Self.database(at: 15, path: path)
        var spec = MessageSpec(content: ["default": "Kept"])
        spec.inbox = MessageSpec.InboxOptions(days: 30)
        try connection.prepare(
            """
            INSERT INTO messages (code, app_id, status, request, send_at, created_at, updated_at, hash, pruned_at)
            SELECT 'AAAA-00000000-00000001', id, 'done', ?2, ?1 - 100, ?1 - 100, ?1 - 100, 'h1', ?1 - 10 FROM applications
            """
        ).run([.integer(now), .text(try spec.storedText())])
        try connection.prepare(
            "INSERT INTO inbox_entries (device_id, message_id, status, sent_at, expires_at) VALUES (1, 1, 3, ?1, ?2), (2, 1, 1, ?1, ?2)"
        ).run([.integer(now - 100), .integer(now - 100 + 30 * 86_400)])
        connection.close()

        let database = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 2000, apps: Self.apps)
        let devices = SQLiteDeviceStore(database: database)
        let campaigns = SQLiteCampaignStore(database: database)
        for hwid in ["H1", "H2"] {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "tok-\(hwid)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 1), tags: []), now: now)
        }
        var statuses: [InboxStatus] = []
        for hwid in ["H1", "H2"] {
            let owner = try #require(try campaigns.inboxOwner(app: "APP-1", hwid: hwid))
            let entry = try #require(try campaigns.inbox(owner, after: nil, limit: 0, now: now).entries.first)
            #expect((entry.order, entry.sentAt, entry.expiresAt) == (1, now - 100, now - 100 + 30 * 86_400))
            statuses.append(entry.status)
        }
        #expect(statuses == [.opened, .delivered])
        #expect(try campaigns.pruneDeliveries(finishedBefore: now, limit: 100, now: now) == 0, "kept while the inbox lasts")
    }

    /// The tables are rendered from `Tables` in SQLite's dialect, and a shipped migration never
    /// changes: these statements are the text migrations 1 and 5 shipped with.
    @Test func theShippedMigrationsCreateTheirTablesAsTheyShipped() {
        #expect(Schema.migrations[0].contains("""
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
            """), "\(Schema.migrations[0])")
        #expect(Schema.migrations[4] == """
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
            """, "\(Schema.migrations[4])")
    }

    /// The opt-in history moves to a table keyed by application and time with every row it had,
    /// two changes of one device in one second among them; after the upgrade, changes are
    /// recorded as before, however many fall in one second.
    @Test func anUpgradeKeepsTheOptInHistory() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("h.sqlite")
        // A database at version 17: H1 registered opted out, then opted in within the same second.
        let connection = try Self.database(at: 17, path: path)
        try connection.execute("""
            INSERT INTO devices (app_id, hwid, platform, push_token, notification_types, app_version, created_at, updated_at)
            VALUES (1, 'H0', 1, 'tok-0', 7, '1.0', 100, 100), (1, 'H1', 1, 'tok-1', 0, '1.0', 200, 200);
            UPDATE devices SET notification_types = 7 WHERE hwid = 'H1';
            """)
        connection.close()

        let database = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 2000, apps: Self.apps)
        let devices = SQLiteDeviceStore(database: database)
        let analytics = SQLiteAnalyticsStore(database: database)
        #expect(try analytics.optIns(app: "APP-1", from: 0, to: 86_400) == [
            OptInCount(day: 0, appVersion: "1.0", registered: 2, optedIn: 2, optedOut: 1),
        ])
        // Three changes of H0 in one second, each a row of its own.
        for subscribed in [false, true, false] {
            try devices.setSubscribed(app: "APP-1", hwid: "H0", subscribed: subscribed, now: 300)
        }
        #expect(try analytics.optIns(app: "APP-1", from: 0, to: 86_400) == [
            OptInCount(day: 0, appVersion: "1.0", registered: 2, optedIn: 3, optedOut: 3),
        ])
        let reader = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        #expect(try reader.prepare("SELECT group_concat(seq) FROM permission_changes WHERE at = 300").first { $0.text(0) } == "0,1,2")
    }

    /// A list's items lose the reference to their device and keep every row and their index; a
    /// list set after the upgrade replaces its items as before.
    @Test func anUpgradeKeepsTheListItemsWithoutTheirReference() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("h.sqlite")
        let connection = try Self.database(at: 19, path: path)
        try connection.execute("""
            INSERT INTO devices (app_id, hwid, platform, push_token, created_at, updated_at) VALUES (1, 'H0', 1, 'tok-0', 100, 100);
            INSERT INTO tag_definitions (app_id, name, type, created_at) VALUES (1, 'Pets', \(TagType.list.rawValue), 100);
            INSERT INTO device_tags (device_id, name, app_id, type, str) VALUES (1, 'Pets', 1, \(TagType.list.rawValue), '["cat","dog"]');
            INSERT INTO device_tag_items (device_id, name, item, app_id) VALUES (1, 'Pets', 'cat', 1), (1, 'Pets', 'dog', 1);
            """)
        #expect(try connection.prepare("SELECT count(*) FROM pragma_foreign_key_list('device_tag_items')").first { $0.int(0) } == 1)
        connection.close()

        let database = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 2000, apps: Self.apps)
        let reader = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        #expect(try reader.prepare("SELECT count(*) FROM pragma_foreign_key_list('device_tag_items')").first { $0.int(0) } == 0)
        #expect(try reader.prepare("SELECT group_concat(item) FROM device_tag_items WHERE device_id = 1").first { $0.text(0) } == "cat,dog")
        let plan = try reader.prepare("EXPLAIN QUERY PLAN SELECT device_id FROM device_tag_items WHERE app_id = 1 AND name = 'Pets' AND item = 'cat'")
            .rows([]) { $0.text(3) }
        #expect(plan.contains { $0.contains("device_tag_items_by_item") })
        let devices = SQLiteDeviceStore(database: database)
        try devices.setTags(app: "APP-1", hwid: "H0", attributes: DeviceAttributes(),
                            updates: [TagUpdate(name: "Pets", operation: .set(.array(["emu", "cat"])))], now: 200)
        #expect(try reader.prepare("SELECT group_concat(item) FROM device_tag_items WHERE device_id = 1").first { $0.text(0) } == "cat,emu")
    }

    /// Migrations only go forward: an older Herald refuses a database a newer one migrated, as on PostgreSQL.
    @Test func aSchemaNewerThanTheCodeIsRefused() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("h.sqlite")
        _ = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 2000, apps: Self.apps)
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        try connection.execute("PRAGMA user_version = \(Schema.migrations.count + 1)")
        connection.close()
        let error = try #require(throws: (any Error).self) { _ = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 2000, apps: Self.apps) }
        #expect("\(error)".contains("newer than this Herald"), "\(error)")
    }
}
