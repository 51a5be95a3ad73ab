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

    @Test func aSchemaNewerThanTheCodeIsRefused() throws {
        let url = try PostgresServer.shared().makeSchema()
        _ = try Self.open(url)
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        try connection.run("INSERT INTO schema_migrations (version) VALUES ($1)", [.integer(Int64(PostgresSchema.migrations.count + 1))])
        let error = try #require(throws: StoreError.self) { _ = try Self.open(url) }
        #expect("\(error)".contains("newer than this Herald"))
    }
}
