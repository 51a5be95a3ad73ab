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

    /// The single number a `SELECT count(*) …` returns.
    func count(_ sql: String) throws -> Int {
        Int(try query(sql, columns: 1).first?.first.flatMap { $0 } ?? "") ?? -1
    }
}
