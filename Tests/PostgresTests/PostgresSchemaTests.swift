import Foundation
import Synchronization
import Testing
import Core
@testable import Postgres
import TestSupport

/// Migrations on start: once per database however many processes start together, and never
/// against a schema newer than the code.
@Suite struct PostgresSchemaTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    static func open(_ url: String, apps: [AppConfiguration] = apps) throws(StoreError) -> PostgresDatabase {
        try PostgresDatabase(settings: PostgresConnectionSettings(url: url), poolSize: 2, acquireTimeoutMilliseconds: 5000, apps: apps)
    }

    @Test func processesStartingAtOnceMigrateOnce() throws {
        let url = try PostgresServer.shared().makeSchema()
        let failures = Atomic<Int>(0)
        let done = DispatchGroup()
        for _ in 0..<6 {
            done.enter()
            Thread {
                if (try? Self.open(url)) == nil { failures.add(1, ordering: .relaxed) }
                done.leave()
            }.start()
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(failures.load(ordering: .relaxed) == 0)
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        let versions = try connection.rows("SELECT version FROM schema_migrations ORDER BY version") { Int($0.int(0)) }
        #expect(versions == Array(1...PostgresSchema.migrations.count))
        #expect(try connection.first("SELECT count(*) FROM applications") { $0.int(0) } == 1)
    }

    @Test func reopeningKeepsTheApplicationIDs() throws {
        let url = try PostgresServer.shared().makeSchema()
        let first = try Self.open(url).appIDs
        let two = Self.apps + [AppConfiguration(code: "APP-2", name: "Two", apiToken: "u", sink: "s")]
        let second = try Self.open(url, apps: two).appIDs
        #expect(second["APP-1"] == first["APP-1"] && second["APP-2"] != nil && second["APP-2"] != first["APP-1"])
    }

    @Test func anUpgradeKeepsTheTransactionIdsOfEarlierMessagesForTheirDay() throws {
        let url = try PostgresServer.shared().makeSchema()
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        // A database at version 2, whose unique index kept transaction ids forever.
        try connection.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for version in 1...2 {
            try connection.execute(PostgresSchema.migrations[version - 1])
            try connection.run("INSERT INTO schema_migrations (version) VALUES ($1)", [.integer(Int64(version))])
        }
        try connection.run("INSERT INTO applications (code, name) VALUES ('APP-1', 'One')")
        try connection.run("""
            INSERT INTO messages (code, app_id, transaction_id, status, request, send_at, created_at, updated_at, hash)
            SELECT 'AAAA-00000000-00000001', id, 'daily', 'done', '{}', 1000, 1000, 1000, 'h1' FROM applications
            """)
        let campaigns = PostgresCampaignStore(database: try Self.open(url))
        var spec = MessageSpec(content: ["default": "Digest"])
        spec.schedule = MessageSpec.Schedule(sendAt: 0, perDeviceTimezone: false)
        let message = NewMessage(spec: spec, transactionID: "daily")
        #expect(try campaigns.createMessages(app: "APP-1", [message], now: 1_000 + NewMessage.transactionWindow - 1) == ["AAAA-00000000-00000001"])
        #expect(try campaigns.createMessages(app: "APP-1", [message], now: 1_000 + NewMessage.transactionWindow) != ["AAAA-00000000-00000001"])
    }

    @Test func anUpgradeKeepsTheInboxCopiesTheirStatusesAndTheirDeliveryRows() throws {
        let url = try PostgresServer.shared().makeSchema()
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        let now = Int64(Date().timeIntervalSince1970)
        // A database at version 11, with one copy per device of a message kept 30 days: device 1
        // opened it, and retention had already deleted the message's delivery rows.
        try connection.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for version in 1...11 {
            try connection.execute(PostgresSchema.migrations[version - 1])
            try connection.run("INSERT INTO schema_migrations (version) VALUES ($1)", [.integer(Int64(version))])
        }
        try connection.run("INSERT INTO applications (code, name) VALUES ('APP-1', 'One')")
        var spec = MessageSpec(content: ["default": "Kept"])
        spec.inbox = MessageSpec.InboxOptions(days: 30)
        try connection.run(
            """
            INSERT INTO messages (code, app_id, status, request, send_at, created_at, updated_at, hash, pruned_at)
            SELECT 'AAAA-00000000-00000001', id, 'done', $2, $1 - 100, $1 - 100, $1 - 100, 'h1', $1 - 10 FROM applications
            """, [.integer(now), .text(try spec.storedText())])
        let message = try #require(try connection.first("SELECT id FROM messages", []) { $0.int(0) })
        try connection.run(
            """
            INSERT INTO inbox_entries (device_id, message_id, status, sent_at, expires_at)
            SELECT device, $1, status, $2, $3 FROM (VALUES (1, 3), (2, 1)) AS copies(device, status)
            """, [.integer(message), .integer(now - 100), .integer(now - 100 + 30 * 86_400)])

        let database = try Self.open(url)
        let devices = PostgresDeviceStore(database: database)
        let campaigns = PostgresCampaignStore(database: database)
        var owners: [InboxOwner] = []
        for hwid in ["H1", "H2"] {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "tok-\(hwid)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 1), tags: []), now: now)
            owners.append(try #require(try campaigns.inboxOwner(app: "APP-1", hwid: hwid)))
        }
        #expect(owners.map(\.deviceID) == [1, 2])
        var statuses: [InboxStatus] = []
        for owner in owners {
            let entry = try #require(try campaigns.inbox(owner, after: nil, limit: 0, now: now).entries.first)
            #expect((entry.order, entry.sentAt, entry.expiresAt) == (message, now - 100, now - 100 + 30 * 86_400))
            statuses.append(entry.status)
        }
        #expect(statuses == [.opened, .delivered])
        #expect(try campaigns.pruneDeliveries(finishedBefore: now, limit: 100, now: now) == 0, "kept while the inbox lasts")
    }

    /// The tables are rendered from `Tables` in PostgreSQL's dialect (no references on the busy
    /// tables, booleans, identity keys), and a shipped migration never changes: these statements
    /// are the text migration 1 shipped with.
    @Test func theShippedMigrationsCreateTheirTablesAsTheyShipped() {
        for statement in [
            """
            CREATE TABLE devices (
                id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                app_id bigint NOT NULL,
                hwid text NOT NULL,
                platform integer NOT NULL,
                push_token text,
                gateway text,
                language text,
                timezone_offset bigint,
                app_version text,
                os_version text,
                device_model text,
                sdk_version text,
                user_id text,
                subscribed boolean NOT NULL DEFAULT true,
                notification_types bigint,
                badge bigint NOT NULL DEFAULT 0,
                created_at bigint NOT NULL,
                updated_at bigint NOT NULL,
                last_open_at bigint,
                token_invalid_reason text,
                UNIQUE (app_id, hwid)
            );
            """,
            """
            CREATE TABLE delivery_retries (
                message_id bigint NOT NULL,
                device_id bigint NOT NULL,
                shard_id bigint NOT NULL,
                attempts integer NOT NULL,
                ambiguous integer NOT NULL DEFAULT 0,
                sending boolean NOT NULL DEFAULT false,
                next_at bigint NOT NULL,
                expires_at bigint NOT NULL,
                reason text NOT NULL,
                PRIMARY KEY (message_id, device_id)
            );
            """,
        ] {
            #expect(PostgresSchema.migrations[0].contains(statement), "\(statement)")
        }
    }

    @Test func aSchemaNewerThanTheCodeIsRefused() throws {
        let url = try PostgresServer.shared().makeSchema()
        _ = try Self.open(url)
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        try connection.run("INSERT INTO schema_migrations (version) VALUES ($1)", [.integer(Int64(PostgresSchema.migrations.count + 1))])
        let error = try #require(throws: StoreError.self) { _ = try Self.open(url) }
        #expect("\(error)".contains("newer than this Herald"))
    }
}
