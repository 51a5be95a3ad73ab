import Foundation
import Testing
import Core
@testable import SQLite
import TestSupport

/// Migrations of an existing SQLite database.
@Suite struct SchemaTests {
    @Test func anUpgradeKeepsTheTransactionIdsOfEarlierMessagesForTheirDay() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("h.sqlite")
        // A database at version 7, whose unique index kept transaction ids forever.
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        for version in 1...7 { try connection.execute(Schema.migrations[version - 1]) }
        try connection.execute("PRAGMA user_version = 7")
        try connection.execute("INSERT INTO applications (code, name) VALUES ('APP-1', 'One')")
        try connection.execute("""
            INSERT INTO messages (code, app_id, transaction_id, status, request, send_at, created_at, updated_at, hash)
            SELECT 'AAAA-00000000-00000001', id, 'daily', 'done', '{}', 1000, 1000, 1000, 'h1' FROM applications
            """)
        connection.close()
        let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
        let campaigns = SQLiteCampaignStore(database: try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 2000, apps: apps))
        var spec = MessageSpec(content: ["default": "Digest"])
        spec.schedule = MessageSpec.Schedule(sendAt: 0, perDeviceTimezone: false)
        let message = NewMessage(spec: spec, transactionID: "daily")
        #expect(try campaigns.createMessages(app: "APP-1", [message], now: 1_000 + NewMessage.transactionWindow - 1) == ["AAAA-00000000-00000001"])
        #expect(try campaigns.createMessages(app: "APP-1", [message], now: 1_000 + NewMessage.transactionWindow) != ["AAAA-00000000-00000001"])
    }
}
