import Testing
@testable import SQLite
import TestSupport

/// The herald VFS writes a commit's WAL frames together (`SQLiteVFS`): what every connection reads,
/// before and after checkpoints, WAL restarts and reopening, is what was committed.
@Suite struct WALGatheringTests {
    /// A connection on `path` with `synchronous` as Herald's writer runs it, and a table `t`.
    private func writer(_ path: String, synchronousFull: Bool = true) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        if synchronousFull { try connection.execute("PRAGMA synchronous=FULL") }
        try connection.execute("PRAGMA wal_autocheckpoint=0")
        try connection.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v TEXT)")
        return connection
    }

    private func insert(_ connection: SQLiteConnection, from first: Int, count: Int, size: Int = 200) throws {
        try connection.writeTransaction {
            for n in first..<(first + count) {
                try connection.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
                    .run([.text("key-\(n * 7919 % 100_003)-\(n)"), .text(String(repeating: "v\(n % 10)", count: size / 2))])
            }
        }
    }

    private func count(_ connection: SQLiteConnection) throws -> Int64 {
        try connection.prepare("SELECT count(*) FROM t").first { $0.int(0) } ?? -1
    }

    @Test(arguments: [true, false])
    func everyCommitIsSeenByAnotherConnectionAndAfterReopening(synchronousFull: Bool) throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("g.sqlite")
        let connection = try writer(path, synchronousFull: synchronousFull)
        #expect(connection.vfsName == "herald/unix")
        let reader = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        var total: Int64 = 0
        // Commits of one frame up to many times the 124 KiB written at once.
        for (round, rows) in [1, 3, 30, 700, 2_500, 5].enumerated() {
            try insert(connection, from: Int(total), count: rows)
            total += Int64(rows)
            #expect(try count(reader) == total, "after commit \(round)")
        }
        // A checkpoint copies the WAL back; the next commit restarts the WAL at its beginning.
        try connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        try insert(connection, from: Int(total), count: 400)
        total += 400
        #expect(try count(reader) == total)
        reader.close()
        connection.close()
        let reopened = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        #expect(try count(reopened) == total)
        #expect(try reopened.prepare("PRAGMA integrity_check").first { $0.text(0) } == "ok")
    }

    @Test func aTransactionLargerThanItsCacheReadsBackWhatItSpilledToTheWAL() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("s.sqlite")
        let connection = try writer(path)
        // 20 pages of cache: the transaction writes pages out to the WAL before its commit and reads
        // them back while it goes on.
        try connection.execute("PRAGMA cache_size=20")
        try connection.writeTransaction {
            for n in 0..<3_000 {
                try connection.prepare("INSERT INTO t (k, v) VALUES (?, ?)").run([.text("k\(n * 7919 % 3_001)"), .text(String(repeating: "x", count: 300))])
            }
            #expect(try connection.prepare("SELECT count(*) FROM t WHERE k >= 'k1'").first { $0.int(0) } ?? 0 > 2_000)
            try connection.prepare("UPDATE t SET v = 'y' WHERE id % 2 = 0").run()
        }
        let reader = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        #expect(try reader.prepare("SELECT count(*), sum(v = 'y') FROM t").first { [$0.int(0), $0.int(1)] } == [3_000, 1_500])
        #expect(try reader.prepare("PRAGMA integrity_check").first { $0.text(0) } == "ok")
    }

    @Test func aRolledBackTransactionLeavesNothing() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("r.sqlite")
        let connection = try writer(path)
        try insert(connection, from: 0, count: 10)
        try connection.execute("PRAGMA cache_size=20")
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try connection.writeTransaction {
                for n in 10..<2_000 {
                    try connection.prepare("INSERT INTO t (k, v) VALUES (?, ?)").run([.text("r\(n)"), .text(String(repeating: "z", count: 300))])
                }
                throw Stop()
            }
        }
        try insert(connection, from: 2_000, count: 5)
        let reader = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 2000)
        #expect(try count(reader) == 15)
        #expect(try reader.prepare("PRAGMA integrity_check").first { $0.text(0) } == "ok")
    }
}
