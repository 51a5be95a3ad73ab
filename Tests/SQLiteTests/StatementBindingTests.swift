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

    /// A statement bound and stepped later reads the texts it was given, after the Strings that
    /// held them are gone and their memory is used again.
    @Test func boundTextsOutliveTheirStrings() throws {
        let folder = try TemporaryDirectory()
        let connection = try connection(in: folder)
        let statement = try connection.prepare("SELECT ?1, ?2")
        do {
            let first = String(repeating: "first-", count: 20), second = String(repeating: "second", count: 30)
            try statement.bind([.text(first), .text(second)])
        }
        // Buffers of the size the two texts took, which reuse their memory were it freed.
        let churn = (0..<64).map { _ in [UInt8](repeating: 0x7A, count: 300) }
        #expect(churn.count == 64)
        #expect(try statement.step())
        #expect(statement.text(0) == String(repeating: "first-", count: 20) && statement.text(1) == String(repeating: "second", count: 30))
    }

    /// Each of many texts built one after another (each freed before the next, so their storage
    /// is used again) gets its own statement, across the cache's clearing at 512 statements.
    @Test func textsBuiltInTurnEachGetTheirOwnStatement() throws {
        let folder = try TemporaryDirectory()
        let connection = try connection(in: folder)
        for number in 0..<600 {
            let sql = "SELECT \(number) AS number, 'a text long enough to be stored apart from its String'"
            #expect(try connection.prepare(sql).first([]) { $0.int(0) } == Int64(number))
            // The same text again, from the same storage and from a copy of its own.
            #expect(try connection.prepare(sql).first([]) { $0.int(0) } == Int64(number))
            #expect(try connection.prepare(String(decoding: Array(sql.utf8), as: UTF8.self)).first([]) { $0.int(0) } == Int64(number))
        }
    }
}
