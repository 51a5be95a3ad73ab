import Testing
@testable import SQLite
import TestSupport

/// What a cached statement stores for the values it is given, run after run.
@Suite struct StatementBindingTests {
    /// A connection on a fresh file with a table `t (a, b, c)`.
    private func connection(in folder: TemporaryDirectory) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: folder.file("b.sqlite"), busyTimeoutMilliseconds: 2000)
        try connection.execute("CREATE TABLE t (a, b, c)")
        return connection
    }

    private func rows(_ connection: SQLiteConnection) throws -> [[SQLiteValue]] {
        try connection.prepare("SELECT a, b, c FROM t ORDER BY rowid").rows { [$0.value(0), $0.value(1), $0.value(2)] }
    }

    @Test func textsAreStoredWholeEmptyOnesAsEmptyText() throws {
        let folder = try TemporaryDirectory()
        let connection = try connection(in: folder)
        let insert = "INSERT INTO t (a, b, c) VALUES (?, ?, ?)"
        let long = String(repeating: "APA91bHPRgkFLJu6", count: 10)
        try connection.prepare(insert).run([.text(""), .text("a\u{0}b"), .text(long)])
        try connection.prepare(insert).run([.text("short"), .text("é✓"), .null])
        #expect(try connection.prepare("SELECT a, hex(b), c FROM t ORDER BY rowid").rows { [$0.value(0), $0.value(1), $0.value(2)] }
                == [[.text(""), .text("610062"), .text(long)], [.text("short"), .text("C3A9E29C93"), .null]])
    }

    @Test func parametersLeftOutAreNullEvenAfterARunThatBoundThem() throws {
        let folder = try TemporaryDirectory()
        let connection = try connection(in: folder)
        let insert = "INSERT INTO t (a, b, c) VALUES (?, ?, ?)"
        try connection.prepare(insert).run([.integer(1), .text("two"), .integer(3)])
        try connection.prepare(insert).run([.integer(4)])
        try connection.prepare(insert).run([])
        #expect(try rows(connection) == [[.integer(1), .text("two"), .integer(3)], [.integer(4), .null, .null], [.null, .null, .null]])
    }
}
