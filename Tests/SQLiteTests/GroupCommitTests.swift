import Dispatch
import Synchronization
import Foundation
import Testing
import Core
@testable import SQLite
import TestSupport

/// Requests that share the writer's transaction (`SQLiteDatabase.submitRequest`): a write that fails
/// leaves nothing behind and the others in its batch commit.
@Suite struct GroupCommitTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    /// A one-statement write runs without a savepoint: when its statement fails, SQLite undoes all
    /// of it (the first row of a two-row INSERT too), and the batch's other writes commit.
    @Test func aFailingOneStatementWriteLeavesNothingAndTheBatchCommits() throws {
        let folder = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: folder.file("g.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
        try database.write { try $0.connection.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)") }
        func insert(_ sql: String, oneStatement: Bool) -> @Sendable () -> Bool {
            { (try? database.write(oneStatement: oneStatement) { try $0.connection.execute(sql) }) != nil }
        }
        let results = inOneBatch(database, [
            insert("INSERT INTO t VALUES (1, 'a')", oneStatement: true),
            insert("INSERT INTO t VALUES (2, 'b'), (1, 'again')", oneStatement: true),
            insert("INSERT INTO t VALUES (3, NULL)", oneStatement: true),
            insert("INSERT INTO t VALUES (4, 'd')", oneStatement: true),
            // Two statements, the second failing: its savepoint undoes the first.
            insert("INSERT INTO t VALUES (5, 'e'); INSERT INTO t VALUES (4, 'dup')", oneStatement: false),
            insert("INSERT INTO t VALUES (6, 'f')", oneStatement: false),
        ])
        #expect(results == [true, false, false, true, false, true])
        let rows = try database.read { connection in
            try connection.prepare("SELECT k, v FROM t ORDER BY k").rows([]) { "\($0.int(0))=\($0.text(1))" }
        }
        #expect(rows == ["1=a", "4=d", "6=f"])
    }

    /// A request that writes again after SQLite rolled its batch back by itself (here a ROLLBACK in
    /// the transaction, as SQLITE_FULL or an I/O error would) gets an error, and its statement does
    /// not commit on its own outside the batch.
    @Test func aWriteAfterTheBatchWasRolledBackFailsAndCommitsNothing() throws {
        let folder = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: folder.file("r.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
        try database.write { try $0.connection.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)") }
        let wrote = Mutex<[Bool]>([])
        let results = inOneBatch(database, [
            { (try? database.write(oneStatement: true) { try $0.connection.execute("INSERT INTO t VALUES (1, 'a')") }) != nil },
            {
                _ = try? database.write(oneStatement: true) { try $0.connection.execute("ROLLBACK") }
                let one = (try? database.write(oneStatement: true) { try $0.connection.execute("INSERT INTO t VALUES (2, 'b')") }) != nil
                let many = (try? database.write { try $0.connection.execute("INSERT INTO t VALUES (3, 'c')") }) != nil
                wrote.withLock { $0 = [one, many] }
                return true
            },
        ])
        #expect(wrote.withLock { $0 } == [false, false])
        // The batch did not commit: every request hears that it failed.
        #expect(results == [false, false])
        let rows = try database.read { connection in try connection.prepare("SELECT count(*) FROM t").first([]) { $0.int(0) } }
        #expect(rows == 0)
    }
}
