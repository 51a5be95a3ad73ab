internal import CSQLite
internal import SQLiteVFS
import Core
import StoreCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Owns one `sqlite3*` handle and its prepared statements.
///
/// `@unchecked Sendable` invariant: a connection is used by one thread at a time (the store hands
/// connections out under a lock) and closed exactly once by its owner.
public final class SQLiteConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    private var statements: [StatementKey: SQLiteStatement] = [:]
    /// The statements last found for long texts, by where each text's bytes are stored (`Recent`).
    private var recent = [Recent?](repeating: nil, count: 64)
    /// Set while a read transaction stays open between reads (`SQLiteDatabase.readLatest`): the WAL
    /// index as it was when the transaction's snapshot was taken.
    var heldSnapshot: WALIndex.Reading?
    /// The bytes this connection's page cache holds, as last measured (`measurePageCache`).
    let pageCacheBytes = Atomic<Int64>(0)
    /// What the busy handler needs between its calls; freed after the handle is closed.
    private let busyState = UnsafeMutablePointer<herald_busy_state>.allocate(capacity: 1)
    public let path: String

    /// Opens (creating if needed) the database at `path` with Herald's per-connection settings:
    /// WAL journal, `synchronous=NORMAL`, a busy wait of `busyTimeoutMilliseconds` (polled every
    /// 100 µs: see `herald_sqlite3_busy_wait`), foreign keys on.
    /// `cacheKiB` bounds the page cache: the writer gets a large one (registry indexes are written
    /// at random), pooled readers a small one so that processes stay lean. Pages are read into that
    /// cache, never through a mapping of the file: SQLite drops a mapping whenever a read
    /// transaction begins after another connection's commit, and with one it looks a page up in the
    /// WAL's hash tables on every visit (4% of the writer's time in registerDevice), where a cached
    /// page costs one lookup of the cache.
    public init(path: String, busyTimeoutMilliseconds: Int, readOnly: Bool = false, cacheKiB: Int = 8192) throws(SQLiteError) {
        self.path = path
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        // The herald VFS writes each commit's WAL frames with one call (SQLiteVFS); the system's
        // default VFS if it cannot be registered.
        _ = Self.withoutMemoryStatistics
        let result = sqlite3_open_v2(path, &db, flags, herald_vfs_register() == SQLITE_OK ? herald_vfs_name : nil)
        guard result == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw SQLiteError(code: result, message: message, context: "opening the database file")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        busyState.initialize(to: herald_busy_state(timeout_ms: busyTimeoutMilliseconds, since: timespec()))
        herald_sqlite3_set_busy_wait(db, busyState)
        if !readOnly {
            // Switching a new database to WAL takes a lock the busy handler does not wait for: when
            // several processes start together on a new file, retry until the busy timeout.
            var wait = 0.005
            let deadline = monotonicSeconds() + Double(busyTimeoutMilliseconds) / 1000
            while true {
                do {
                    try execute("PRAGMA journal_mode=WAL")
                    break
                } catch where error.code & 0xFF == SQLITE_BUSY && monotonicSeconds() < deadline {
                    usleep(useconds_t(wait * 1_000_000))
                    wait = min(wait * 2, 0.1)
                }
            }
        }
        try execute("PRAGMA synchronous=NORMAL")
        try execute("PRAGMA foreign_keys=ON")
        try execute("PRAGMA cache_size=-\(cacheKiB)")
    }

    /// SQLite's count of all the memory it holds, made once before the first connection opens:
    /// kept, it would take one mutex of the whole process on every allocation and release of every
    /// connection (SQLite here is built without per-connection lookaside memory, so a statement's
    /// step allocates). Each connection's page cache is measured by itself instead (`pageCacheBytes`).
    private static let withoutMemoryStatistics: Int32 = herald_sqlite3_disable_memstatus()

    /// Measures `pageCacheBytes`. On the thread that uses the connection, or while none does.
    func measurePageCache() {
        guard let handle else { return }
        var current: Int32 = 0, highwater: Int32 = 0
        guard sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_USED, &current, &highwater, 0) == SQLITE_OK else { return }
        pageCacheBytes.store(Int64(current), ordering: .relaxed)
    }

    /// Closes the handle. Safe to call once; later use of the connection fails.
    public func close() {
        finalizeStatements()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    deinit {
        close()
        busyState.deallocate()
    }

    func error(_ code: Int32, _ context: String) -> SQLiteError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "connection closed"
        let extended = handle.map { sqlite3_extended_errcode($0) } ?? code
        return SQLiteError(code: extended, message: message, context: context)
    }

    /// Runs one or more statements that return no rows of interest.
    public func execute(_ sql: String) throws(SQLiteError) {
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "connection closed", context: sql) }
        let result = sqlite3_exec(handle, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw error(result, "executing \(sql.prefix(60))") }
    }

    /// Runs a fixed statement (BEGIN, COMMIT, SAVEPOINT …) through the statement cache, which is
    /// cheaper than `execute` for statements run on every transaction.
    public func statement(_ sql: String) throws(SQLiteError) {
        try prepare(sql).run()
    }

    /// A cached prepared statement for `sql`, reset and with bindings cleared.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        let stored = Recent.storage(of: sql)
        if let stored, let found = recent[stored.slot], found.bytes == stored.bytes, found.text.utf8.count == sql.utf8.count {
            found.statement.reset()
            return found.statement
        }
        if let cached = statements[StatementKey(sql)] {
            cached.reset()
            if let stored { recent[stored.slot] = Recent(text: sql, bytes: stored.bytes, statement: cached) }
            return cached
        }
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "connection closed", context: sql) }
        var raw: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard result == SQLITE_OK, let raw else { throw error(result, "preparing \(sql.prefix(60))") }
        let statement = SQLiteStatement(raw, connection: self, sql: sql)
        // Targeting builds SQL per message shape: bound the cache so long-lived connections don't grow.
        if statements.count >= 512 { finalizeStatements() }
        statements[StatementKey(sql)] = statement
        if let stored { recent[stored.slot] = Recent(text: sql, bytes: stored.bytes, statement: statement) }
        return statement
    }

    /// Finalizes every cached statement and forgets them, by text and by where their texts are stored.
    private func finalizeStatements() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        recent = recent.map { _ in nil }
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`; rolls back when it throws.
    public func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(beginningWith: "BEGIN IMMEDIATE", body)
    }

    /// Runs `body` inside a read transaction so that all its queries see one snapshot.
    public func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try statement("BEGIN")
        defer { try? statement("COMMIT") }
        return try body()
    }

    /// The first region of the WAL index as SQLite maps it (`herald_sqlite3_wal_index`); nil when the
    /// database is not in WAL mode or the connection is closed.
    var walIndexRegion: UnsafeRawPointer? {
        handle.flatMap { herald_sqlite3_wal_index($0) }.map { UnsafeRawPointer($0) }
    }

    /// True outside any transaction (also after SQLite rolled one back by itself).
    public var isAutocommit: Bool { handle.map { sqlite3_get_autocommit($0) != 0 } ?? true }

    /// The VFS stack the main database is opened through, outermost first ("herald/unix" unless the
    /// herald VFS could not be registered).
    var vfsName: String? {
        var name: UnsafeMutablePointer<CChar>?
        guard let handle, sqlite3_file_control(handle, "main", SQLITE_FCNTL_VFSNAME, &name) == SQLITE_OK, let name else { return nil }
        defer { sqlite3_free(name) }
        return String(cString: name)
    }

    public var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// The row id of the last row inserted on this connection (0 if none). Set, it is what the
    /// next insert replaces, so that a caller can tell whether a statement inserted a row.
    public var lastInsertRowID: Int64 {
        get { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }
        set { if let handle { sqlite3_set_last_insert_rowid(handle, newValue) } }
    }
}

/// A statement found for a text by where the text's bytes are stored, which costs less than hashing
/// it: the statements run on every request are string literals or texts built once, so each call
/// passes the same storage. `text` keeps that storage alive and unchanged (a String that shares its
/// storage copies it before any change), so no other text can be stored there meanwhile: the same
/// address and length are the same text. Only texts longer than any String keeps inline qualify.
private struct Recent {
    let text: String
    let bytes: UnsafeRawPointer
    let statement: SQLiteStatement

    /// Where `sql`'s bytes are stored, and its slot in `SQLiteConnection.recent`; nil for a short
    /// text (a String of up to 15 bytes holds them inline, and lends a copy's address).
    static func storage(of sql: String) -> (bytes: UnsafeRawPointer, slot: Int)? {
        guard sql.utf8.count >= 32, let bytes = sql.utf8.withContiguousStorageIfAvailable({ UnsafeRawPointer($0.baseAddress) }) ?? nil
        else { return nil }
        let address = UInt(bitPattern: bytes)
        return (bytes, Int((address >> 4 ^ address >> 10) & 63))
    }
}

/// The statement cache's key. Hashing a whole statement (the registry's upserts run past a
/// kilobyte) on every lookup costs more than running a small one, so only its length and last
/// bytes are hashed; equality still compares the whole text, which is immediate for the same
/// string literal.
private struct StatementKey: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    func hash(into hasher: inout Hasher) {
        hasher.combine(sql.utf8.count)
        // The last 48 bytes in one call (byte by byte, hashing cost 4% of a registerDevice).
        let hashed: Void? = sql.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0.extracting(max(0, $0.count - 48)...)))
        }
        if hashed == nil { for byte in sql.utf8.suffix(48) { hasher.combine(byte) } }
    }
}

extension SQLiteConnection: TransactionStatements {
    public var canRollBack: Bool { handle != nil }
}

/// The shared statements, their `$n` placeholders read as SQLite's `?n`.
extension SQLiteConnection: StatementRunner {
    public func select<T>(_ sql: String, _ values: [SQLiteValue], _ transform: (SQLiteStatement) throws -> T) throws -> [T] {
        try prepare(Self.positional(sql)).rows(values, transform)
    }

    public func selectFirst<T>(_ sql: String, _ values: [SQLiteValue], _ transform: (SQLiteStatement) throws -> T) throws -> T? {
        try prepare(Self.positional(sql)).first(values, transform)
    }

    @discardableResult
    public func execute(_ sql: String, _ values: [SQLiteValue]) throws -> Int {
        try prepare(Self.positional(sql)).run(values)
        return changes
    }

    public var byteOrder: String { "" }
    public var greatest: String { "max" }
    public func lockForUpdate(of table: String) -> String { "" }
    public var lockForShare: String { "" }
    public func indexedBy(_ index: String) -> String { " INDEXED BY \(index)" }
    public func tokenPrefix(_ expression: String) -> String { "substr(\(expression), 1, 16)" }
    public func entries(of placeholder: String) -> String {
        "(SELECT value AS entry, key + 1 AS position FROM json_each(\(placeholder))) AS e"
    }

    /// `sql` with each `$` that starts a parameter number made `?` (`$3` is parameter 3 in both
    /// syntaxes); any other `$`, as in a JSON path `'$.a'`, stays.
    static func positional(_ sql: String) -> String {
        guard sql.utf8.contains(UInt8(ascii: "$")) else { return sql }
        let scalars = Array(sql.unicodeScalars)
        return String(String.UnicodeScalarView(scalars.indices.map { index in
            let startsNumber = index + 1 < scalars.count && ("0"..."9").contains(scalars[index + 1])
            return scalars[index] == "$" && startsNumber ? "?" : scalars[index]
        }))
    }
}
