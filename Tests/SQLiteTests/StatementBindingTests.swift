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

    /// Texts appended one by one (`run(binding:)`) are stored whole: more of them than one chunk
    /// of the statement's text memory holds, one longer than a chunk, empty ones as empty text,
    /// run after run on the same statement.
    @Test func textsAppendedOneByOneAreStoredWholeAcrossChunks() throws {
        let folder = try TemporaryDirectory()
        let connection = try connection(in: folder)
        let insert = "INSERT INTO t (a, b, c) VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?)"
        let texts: [[String]] = [
            [String(repeating: "a", count: 40_000), "", "xy"],
            [String(repeating: "b", count: 40_000), String(repeating: "c", count: 100_000), "é✓"],
            [String(repeating: "d", count: 30_000), "short", ""],
        ]
        for _ in 0..<2 {
            try connection.prepare(insert).run { parameters in
                for row in texts { for text in row { parameters.append(.text(text)) } }
            }
        }
        let stored = try connection.prepare("SELECT a, b, c FROM t ORDER BY rowid").rows { [$0.text(0), $0.text(1), $0.text(2)] }
        // Lengths first, so that a failure does not print the long texts.
        #expect(stored.map { $0.map(\.utf8.count) } == (texts + texts).map { $0.map(\.utf8.count) })
        let storedAsGiven = stored == texts + texts
        #expect(storedAsGiven)
        #expect(try connection.prepare("SELECT count(*) FROM t WHERE a IS NULL OR b IS NULL OR c IS NULL").first([]) { $0.int(0) } == 0)
    }

    @Test func parametersNotAppendedAreNullEvenAfterARunThatBoundThem() throws {
        let folder = try TemporaryDirectory()
        let connection = try connection(in: folder)
        let insert = "INSERT INTO t (a, b, c) VALUES (?, ?, ?)"
        try connection.prepare(insert).run { parameters in
            parameters.append(.integer(1))
            parameters.append(.text("t\u{0}o"))
            parameters.append(.real(3.5))
        }
        try connection.prepare(insert).run { $0.append(.integer(4)) }
        try connection.prepare(insert).run([.integer(5), .text("six"), .blob([7])])
        try connection.prepare(insert).run { _ in }
        #expect(try rows(connection).dropFirst() == [[.integer(4), .null, .null], [.integer(5), .text("six"), .blob([7])], [.null, .null, .null]])
        // The whole text, past its NUL byte.
        #expect(try connection.prepare("SELECT a, hex(b), c FROM t WHERE rowid = 1").first([]) { [$0.value(0), $0.value(1), $0.value(2)] }
                == [.integer(1), .text("74006F"), .real(3.5)])
    }

    /// A value appended beyond the statement's parameters fails the run before it changes
    /// anything, and the statement runs as usual afterwards.
    @Test func aValueBeyondTheParametersFailsTheRunAndChangesNothing() throws {
        let folder = try TemporaryDirectory()
        let connection = try connection(in: folder)
        let insert = "INSERT INTO t (a, b, c) VALUES (?, ?, ?)"
        #expect(throws: SQLiteError.self) {
            try connection.prepare(insert).run { parameters in
                for number in 1...4 { parameters.append(.integer(Int64(number))) }
            }
        }
        #expect(try rows(connection).isEmpty)
        try connection.prepare(insert).run { $0.append(.text("after")) }
        #expect(try rows(connection) == [[.text("after"), .null, .null]])
    }
}
