import Foundation
import Synchronization
import Core
import StoreCore

/// One PostgreSQL database shared by the stores of a process.
///
/// Every store call borrows a connection from a small pool (`PostgresPool`) and runs in its own
/// transaction, committed before the call returns, so durability before acknowledgement holds.
/// Concurrent commits share the server's WAL flushes, which is PostgreSQL's own group commit.
/// A write that fails for a reason the server guarantees rolled it back (serialization failure,
/// deadlock, or a connection lost before COMMIT was sent) is run again, at most three times; a
/// connection lost during COMMIT leaves the outcome unknown, so that failure reaches the caller
/// as retryable (HTTP 503), like every failure while the server is unreachable.
public final class PostgresDatabase: Sendable {
    let pool: PostgresPool
    /// The connections of `TagReadBatcher`, one per statement it runs at once, on which the server
    /// plans each statement once (`genericPlans`).
    let tagReadPool: PostgresPool
    /// The connections of `DeviceWriteBatcher`'s lanes, one each, on which the server plans each
    /// batch statement once (`genericPlans`): the SDKs' mix makes batches of many shapes, each a
    /// statement of its own, and a statement planned anew for its first executions on every pooled
    /// connection (a plan per shape and connection) took a fifth of the server's time.
    let batchPool: PostgresPool
    /// Application code → row id, fixed at start.
    let appIDs: NameTable<Int64>
    /// Tag types never change once defined, so they are cached for every connection once committed.
    private let tagTypes = Lock<[Int64: [String: TagType]]>([:])
    private let runner: RequestRunner
    /// The threads of `submitRead`: four per pooled connection, so that reads keep every connection
    /// the writes leave free busy and wait for a connection rather than for the server, and so that
    /// many getTags calls wait together for each of `TagReadBatcher`'s statements.
    private let readers: RequestRunner
    /// What the device write batcher's lanes gather from the requests they run.
    let collector = RequestCollector(threads: DeviceWriteBatcher.lanes)
    /// The error of the last failed commit while commits fail (nil while they succeed), and who
    /// hears of each change between the two.
    let health = CommitHealth()

    /// How often a write is run when the server rolled it back by itself.
    static let attempts = 3

    /// How long the health check and /metrics wait for the server's answer: as long as for a free
    /// connection (`busy_timeout_ms`), so that they answer before a load balancer or a scraper
    /// gives up, but at least a second: with `busy_timeout_ms` 0 no answer would ever be in time.
    var probeTimeout: Duration { max(pool.acquireTimeout, .seconds(1)) }

    /// Connects, applies migrations (several processes may start at once) and registers `apps`.
    public init(settings: PostgresConnectionSettings, poolSize: Int, acquireTimeoutMilliseconds: Int,
                apps: [AppConfiguration]) throws(StoreError) {
        // The three pools learn together whether the server can be reached.
        let reachability = PostgresReachability()
        let pool = PostgresPool(settings: settings, capacity: poolSize, acquireTimeout: .milliseconds(acquireTimeoutMilliseconds),
                                reachability: reachability)
        self.pool = pool
        var generic = settings
        generic.genericPlans = true
        tagReadPool = PostgresPool(settings: generic, capacity: TagReadBatcher.maximumStatements,
                                   acquireTimeout: .milliseconds(acquireTimeoutMilliseconds), reachability: reachability)
        batchPool = PostgresPool(settings: generic, capacity: DeviceWriteBatcher.lanes,
                                 acquireTimeout: .milliseconds(acquireTimeoutMilliseconds), reachability: reachability)
        let (connection, generation) = try Self.mapping { () throws(PostgresError) in try pool.acquire() }
        defer { pool.release(connection, generation: generation) }
        // Unbounded by the statement timeout: a migration may rewrite a large table, and another
        // process's may hold the lock as long.
        appIDs = try Self.mapping {
            try connection.unbounded {
                try PostgresSchema.withLock(connection) {
                    try PostgresSchema.migrate(connection)
                    return try NameTable(connection.transaction { try Self.register(apps, connection) })
                }
            }
        }
        // Requests that write or read more than a batchable registration run here, and wait for a
        // connection rather than for the server: more threads than connections keep every
        // connection busy.
        runner = RequestRunner(threads: poolSize * 8, name: "pg-request")
        readers = RequestRunner(threads: poolSize * 4, name: "pg-read")
    }

    deinit {
        runner.stop()
        readers.stop()
    }

    /// Upserts the configured applications and their declared tag types; returns their ids.
    private static func register(_ apps: [AppConfiguration], _ connection: PostgresConnection) throws -> [String: Int64] {
        var ids: [String: Int64] = [:]
        for app in apps {
            let id = try connection.first(
                "INSERT INTO applications (code, name) VALUES ($1, $2) ON CONFLICT (code) DO UPDATE SET name = excluded.name RETURNING id",
                [.text(app.code), .text(app.name)]
            ) { $0.int(0) } ?? 0
            ids[app.code] = id
            for (name, type) in app.tagTypes.sorted(by: { $0.key < $1.key }) {
                let stored = try connection.first(
                    """
                    INSERT INTO tag_definitions (app_id, name, type, created_at) VALUES ($1, $2, $3, extract(epoch FROM now())::bigint)
                    ON CONFLICT (app_id, name) DO UPDATE SET type = tag_definitions.type RETURNING type
                    """,
                    [.integer(id), .text(name), .integer(Int64(type.rawValue))]
                ) { $0.int(0) }
                if let stored, stored != Int64(type.rawValue) {
                    throw StoreError.invalid(
                        "apps[\(app.code)].tags.\(name) is declared \(type.name) but the database already holds it as \(TagType(rawValue: Int(stored))?.name ?? "another type")")
                }
            }
        }
        return ids
    }

    public func appID(_ code: String) throws(StoreError) -> Int64 {
        guard let id = appIDs[code] else { throw .unknownApplication(code) }
        return id
    }

    public func appCode(_ id: Int64) -> String? { appIDs.name(of: id) }

    // MARK: - Transactions

    /// Runs `body` in a transaction of its own and returns once it is committed.
    @discardableResult
    func write<T>(_ body: (PostgresTransaction) throws -> T) throws(StoreError) -> T {
        try collector.refuseDatabaseAccess()
        var attempt = 0
        while true {
            attempt += 1
            let (connection, generation) = try acquireForWrite(from: pool)
            let transaction = PostgresTransaction(connection: connection)
            var committing = false
            do {
                try connection.execute("BEGIN")
                let value = try body(transaction)
                committing = true
                try connection.execute("COMMIT")
                pool.release(connection, generation: generation)
                if !transaction.definedTags.isEmpty { remember(transaction.definedTags) }
                health.note(nil)
                return value
            } catch {
                if connection.isHealthy && connection.inTransaction { try? connection.execute("ROLLBACK") }
                pool.release(connection, generation: generation)
                if let failure = error as? PostgresError, attempt < Self.attempts,
                    failure.isTransient || (failure.isConnectionLost && !committing) {
                    continue
                }
                throw failed(error)
            }
        }
    }

    /// Runs `body` on a pooled connection (of `pool`, or of `tagReadPool` for `TagReadBatcher`), each
    /// statement on its own (autocommit). A connection that turns out to be lost is replaced once:
    /// reads change nothing, so running them again is safe.
    func read<T>(genericPlans: Bool = false, _ body: (PostgresConnection) throws -> T) throws(StoreError) -> T {
        try collector.refuseDatabaseAccess()
        let pool = genericPlans ? tagReadPool : pool
        var attempt = 0
        while true {
            attempt += 1
            let (connection, generation) = try Self.mapping { () throws(PostgresError) in try pool.acquire() }
            do {
                let value = try body(connection)
                pool.release(connection, generation: generation)
                return value
            } catch {
                if connection.isHealthy && connection.inTransaction { try? connection.execute("ROLLBACK") }
                pool.release(connection, generation: generation)
                if let failure = error as? PostgresError, attempt < 2, failure.isConnectionLost || failure.isTransient { continue }
                throw Self.storeError(error)
            }
        }
    }

    /// Runs statements in autocommit, one at a time (`body` runs one, or another after the first
    /// failed whole): each its own transaction, without BEGIN and COMMIT round trips. Run again when
    /// the server rolled it back. A lost connection leaves its outcome unknown: an `idempotent`
    /// statement runs again (twice changes nothing more); any other fails with that retryable
    /// error, so that its caller is told the outcome is unknown (503, try again) instead of its
    /// writes being made twice. `pool`: where the connection comes from (the shared pool by default).
    @discardableResult
    func autocommit<T>(idempotent: Bool = true, on pool: PostgresPool? = nil,
                       _ body: (PostgresConnection) throws -> T) throws(StoreError) -> T {
        try collector.refuseDatabaseAccess()
        let pool = pool ?? self.pool
        var attempt = 0
        while true {
            attempt += 1
            let (connection, generation) = try acquireForWrite(from: pool)
            do {
                let value = try body(connection)
                pool.release(connection, generation: generation)
                health.note(nil)
                return value
            } catch {
                pool.release(connection, generation: generation)
                if let failure = error as? PostgresError, attempt < Self.attempts,
                    failure.isTransient || (failure.isConnectionLost && idempotent) {
                    continue
                }
                throw failed(error)
            }
        }
    }

    // MARK: - Commit health

    /// A pooled connection for a write; failing to get one (the server is unreachable, or every
    /// connection is busy past the timeout) is a failing commit too.
    private func acquireForWrite(from pool: PostgresPool) throws(StoreError) -> (PostgresConnection, generation: Int) {
        do {
            return try pool.acquire()
        } catch {
            throw failed(error)
        }
    }

    /// The `StoreError` of a write that did not commit, noted as a commit failure unless it is the
    /// request's own fault (an invalid value, a constraint the request broke, an unknown application).
    private func failed(_ error: any Error) -> StoreError {
        let mapped = Self.storeError(error)
        if case .backend(let backendFailure) = mapped,
            !((error as? PostgresError).map { ["22", "23"].contains(String($0.sqlStateClass)) } ?? false) {
            health.note("\(backendFailure)")
        }
        return mapped
    }

    /// `read` inside one read-only snapshot, for answers built from several queries.
    func snapshot<T>(_ body: (PostgresConnection) throws -> T) throws(StoreError) -> T {
        try read { connection in
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let value = try body(connection)
            try connection.execute("COMMIT")
            return value
        }
    }

    /// Runs a whole request on one of the request threads: each store write it makes commits on its
    /// own before returning, so `completion` always gets the request's own result (which maps a
    /// failed commit to its error reply). For work the device write batcher refused.
    func submitRequest<T: Sendable>(_ work: @escaping @Sendable () -> T, completion: @escaping @Sendable (T) -> Void) {
        runner.enqueue { completion(work()) }
    }

    /// Runs a request that only reads on one of the reader threads, in the order requests came, and
    /// hands its result to `completion` there: reads never wait in the queues of the batch lanes or
    /// of the request threads (only, like them, for a free connection), and an HTTP I/O thread
    /// never waits for the server.
    func submitRead<T: Sendable>(_ work: @escaping @Sendable () -> T, completion: @escaping @Sendable (T) -> Void) {
        readers.enqueue { completion(work()) }
    }

    // MARK: - Tag types

    /// The type of a tag: cached, defined earlier in this transaction, or stored.
    func tagType(_ transaction: PostgresTransaction, appID: Int64, name: String) throws -> TagType? {
        if let type = tagTypes.withLock({ $0[appID]?[name] }) { return type }
        if let type = transaction.definedTags[appID]?[name] { return type }
        let stored = try transaction.connection.first("SELECT type FROM tag_definitions WHERE app_id = $1 AND name = $2",
                                                      [.integer(appID), .text(name)]) { $0.int(0) }
        guard let raw = stored, let type = TagType(rawValue: Int(raw)) else { return nil }
        // Not defined by this transaction, so committed by another: safe to share.
        tagTypes.withLock { $0[appID, default: [:]][name] = type }
        return type
    }

    /// The type of a tag when it is cached (defined and committed), without asking the database.
    func cachedTagType(appID: Int64, name: String) -> TagType? {
        tagTypes.withLock { $0[appID]?[name] }
    }

    /// Drops a deleted tag's type from this process's cache (deleteTag).
    func forgetTagType(appID: Int64, name: String) {
        tagTypes.withLock { $0[appID]?[name] = nil }
    }

    private func remember(_ defined: [Int64: [String: TagType]]) {
        tagTypes.withLock { cache in
            for (appID, types) in defined { cache[appID, default: [:]].merge(types) { old, _ in old } }
        }
    }

    // MARK: - Errors

    /// Runs `body`, turning whatever it throws into a `StoreError`.
    static func mapping<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw storeError(error)
        }
    }

    static func storeError(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError: return error
        case let error as PostgresError:
            // A client's value PostgreSQL cannot hold (over its index entry size, too long, out of
            // range, not valid text) is the client's to fix, like any other invalid value.
            if error.isDataError {
                return .invalid("a value is too long or not valid text (\(error.message))")
            }
            return .backend(error.failure)
        case let error as TagError: return .invalid(error.message)
        default: return .backend(PostgresError(sqlState: "XX000", message: "\(error)", context: "unexpected error").failure)
        }
    }
}

/// A write transaction in progress: its connection, and the tag types it defined, which are shared
/// with every connection only once it commits.
final class PostgresTransaction {
    let connection: PostgresConnection
    var definedTags: [Int64: [String: TagType]] = [:]

    init(connection: PostgresConnection) { self.connection = connection }
}

/// Threads that run queued requests (`submitRequest`, `submitRead`) in the order they came, each
/// blocking while its request runs.
final class RequestRunner: Sendable {
    private let queue = Lock<[@Sendable () -> Void]>([])
    private let available = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let threads: Int

    /// Starts `threads` threads named `<name>-<index>`.
    init(threads: Int, name: String) {
        self.threads = threads
        for index in 0..<threads {
            let thread = Thread(named: "\(name)-\(index)") { [self] in run() }
            thread.start()
        }
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(job) }
        available.signal()
    }

    /// Lets the threads end once the queue is empty.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        for _ in 0..<threads { available.signal() }
    }

    private func run() {
        while true {
            available.wait()
            let job = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            guard let job else {
                if stopping.load(ordering: .relaxed) { return }
                continue
            }
            job()
        }
    }
}

/// The shared store rules' view of the database: reads and snapshots on the readers' pool, writes
/// in a transaction.
extension PostgresDatabase: SQLDatabase {
    public func reading<T>(_ body: (PostgresConnection) throws -> T) throws(StoreError) -> T { try read(body) }

    public func readingSnapshot<T>(_ body: (PostgresConnection) throws -> T) throws(StoreError) -> T { try snapshot(body) }

    public func writing<T: Sendable>(_ body: (PostgresConnection) throws -> T) throws(StoreError) -> T {
        try write { try body($0.connection) }
    }
}
