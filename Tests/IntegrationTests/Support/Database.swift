import Core
import Postgres
import SQLite
import Storage
import TestSupport

/// Reading Herald's database from a test, whichever backend it runs on.
extension HeraldProcesses {
    /// The stores over Herald's database, opened from its configuration file as Herald opens them.
    func stores() throws -> any StoreBackend {
        try Storage.open(try Configuration.load(path: configPath))
    }

    /// Runs a query without parameters, read-only, and returns each row's first `columns` columns as text.
    func query(_ sql: String, columns: Int32) throws -> [[String?]] {
        if let databaseURL {
            let connection = try PostgresConnection(PostgresConnectionSettings(url: databaseURL))
            return try connection.rows(sql) { row in (0..<columns).map { row.optionalText($0) } }
        }
        let connection = try SQLiteConnection(path: databasePath, busyTimeoutMilliseconds: 2000, readOnly: true)
        defer { connection.close() }
        return try connection.prepare(sql).rows([]) { row in (0..<columns).map { row.optionalText($0) } }
    }

    /// Changes the schema beside Herald (a test's failing trigger), in the backend's dialect.
    func execute(sqlite: String, postgres: String) throws {
        if let databaseURL {
            try PostgresConnection(PostgresConnectionSettings(url: databaseURL)).execute(postgres)
            return
        }
        let connection = try SQLiteConnection(path: databasePath, busyTimeoutMilliseconds: 5000)
        defer { connection.close() }
        try connection.execute(sqlite)
    }

    /// The single number a `SELECT count(*) …` returns.
    func count(_ sql: String) throws -> Int {
        Int(try query(sql, columns: 1).first?.first.flatMap { $0 } ?? "") ?? -1
    }

    /// Inserts `count` devices of the Shop app straight into the database (`<prefix><i>` with push
    /// token `token-<prefix><i>`, i from 1), in one statement: an audience far larger than
    /// registerDevice calls would build in a test's time. They have no opt-in history on SQLite,
    /// where the store writes a new device's first row, not a trigger as on PostgreSQL.
    func seedDevices(_ count: Int, prefix: String) throws {
        let columns = "app_id, hwid, platform, push_token, created_at, updated_at"
        let values = "(SELECT id FROM applications WHERE code = '\(Self.appCode)'), '\(prefix)' || i, 1, 'token-\(prefix)' || i, 0, 0"
        if let databaseURL {
            let connection = try PostgresConnection(PostgresConnectionSettings(url: databaseURL))
            try connection.execute("INSERT INTO devices (\(columns)) SELECT \(values) FROM generate_series(1, \(count)) AS i")
            return
        }
        let connection = try SQLiteConnection(path: databasePath, busyTimeoutMilliseconds: 5000)
        defer { connection.close() }
        try connection.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count)) INSERT INTO devices (\(columns)) SELECT \(values) FROM n")
    }
}
