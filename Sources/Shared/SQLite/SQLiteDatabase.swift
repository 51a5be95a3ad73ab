import Foundation
import Synchronization
import Core
import StoreCore

/// One SQLite file (WAL) shared by the stores of a process.
///
/// Writes use group commit: callers hand their transaction body to a dedicated writer thread,
/// which runs every body waiting at that moment inside one `BEGIN IMMEDIATE … COMMIT`, each in its
/// own savepoint (a body that throws is rolled back alone; registrations and setTags are put off and
/// written together, see `DeferredWrite`), then wakes the callers. A caller returns
/// only after the commit, so durability before acknowledgement holds, and a busy server pays one
/// commit for many requests. Reads use a small pool of connections and never wait for the writer.
public final class SQLiteDatabase: Sendable {
    /// The writer connection and what it caches. Tag types never change once defined, so caching
    /// them is safe across processes (the cache is dropped on every rollback). `@unchecked Sendable`
    /// invariant: only the committer thread touches it.
    public final class Writer: @unchecked Sendable {
        let connection: SQLiteConnection
        var tagTypes: [Int64: [String: TagType]] = [:]
        /// While a request of the batch runs (`submitRequest`): its place in the batch; nil otherwise.
        var item: Int?
        /// The places of the requests whose put-off writes failed (their answer is a failure).
        var failedItems: Set<Int> = []
        /// Device writes put off until the batch's next other write or its commit, and the store
        /// that writes them (see `DeferredWrite`).
        private var deferred: [DeferredWrite] = []
        private var deferredStore: SQLiteDeviceStore?
        /// How many of `deferred` are registrations, and how many setTags that give attributes:
        /// the lookups below scan the writes only when some could match.
        private var deferredRegistrations = 0
        private var deferredAttributes = 0
        /// Device writes the multi-row statements wrote since the writer started.
        var writtenTogether = 0

        init(connection: SQLiteConnection) { self.connection = connection }

        func deferWrite(_ write: consuming DeferredWrite, store: SQLiteDeviceStore) {
            deferredStore = store
            if case .registration = write.device {
                deferredRegistrations += 1
            } else if write.givenAttributes != nil {
                deferredAttributes += 1
            }
            deferred.append(write)
        }

        /// Whether a registration of that device is put off.
        func defersRegistration(appID: Int64, hwid: String) -> Bool {
            deferredRegistrations > 0 && deferred.contains { $0.registers(appID: appID, hwid: hwid) }
        }

        /// Whether a setTags that updates that device's attributes is put off.
        func defersAttributes(appID: Int64, hwid: String) -> Bool {
            deferredAttributes > 0 && deferred.contains { $0.updatesAttributes(appID: appID, hwid: hwid) }
        }

        /// Writes the writes put off, if any: before every other write of the batch and before its commit.
        func writeDeferred() {
            guard let store = deferredStore else { return }
            var waiting: [DeferredWrite] = []
            swap(&waiting, &deferred)
            deferredStore = nil
            deferredRegistrations = 0
            deferredAttributes = 0
            store.writeDeferred(waiting, self)
        }

        /// Runs `body` in a savepoint of the batch transaction; a throwing body is rolled back alone.
        func inSavepoint(_ body: () throws -> Void) throws {
            try connection.statement("SAVEPOINT item")
            do {
                try body()
                try connection.statement("RELEASE item")
            } catch {
                tagTypes.removeAll()
                try connection.statement("ROLLBACK TO item")
                try connection.statement("RELEASE item")
                throw error
            }
        }
    }

    private let committer: GroupCommitter
    private let checkpointer: Checkpointer
    /// The reading connections not in use, in stripes: a thread takes one from the stripe its id
    /// picks when it holds one and puts it back there, so the I/O loops that read inline seldom
    /// wait for one another.
    private let readers: StripedLock<[SQLiteConnection]>
    /// Every reader opened, in the pool or in use.
    private let openedReaders = Lock<[SQLiteConnection]>([])
    /// What `readLatest` checks before it reuses a held snapshot; nil when the file is not in WAL mode.
    private let walIndex: WALIndex?
    private let path: String
    private let busyTimeoutMilliseconds: Int
    /// Application code → row id, fixed at start.
    let appIDs: NameTable<Int64>

    /// Opens the database, applies migrations, and registers `apps`. `synchronousFull` makes every
    /// group commit wait for the disk (`PRAGMA synchronous=FULL`: one fsync of the WAL per commit);
    /// `cacheMiB` bounds the writer's page cache.
    public init(path: String, busyTimeoutMilliseconds: Int, apps: [AppConfiguration], synchronousFull: Bool = true,
                cacheMiB: Int = 64) throws(StoreError) {
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        do {
            let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds, cacheKiB: cacheMiB * 1024)
            if synchronousFull { try connection.execute("PRAGMA synchronous=FULL") }
            // The undo copies of the pages a savepoint or a statement changes stay in memory: the
            // device writes written together (`DeferredWrite`) change more pages than SQLite keeps
            // in memory before it moves them to a temporary file, which then takes a write call per
            // page for the rest of the transaction.
            try connection.execute("PRAGMA temp_store=MEMORY")
            try Schema.migrate(connection)
            var ids: [String: Int64] = [:]
            try connection.writeTransaction {
                for app in apps {
                    let id = try connection.prepare(
                        "INSERT INTO applications (code, name) VALUES (?, ?) ON CONFLICT (code) DO UPDATE SET name = excluded.name RETURNING id"
                    ).first([.text(app.code), .text(app.name)]) { $0.int(0) } ?? 0
                    ids[app.code] = id
                    for (name, type) in app.tagTypes.sorted(by: { $0.key < $1.key }) {
                        let stored = try connection.prepare(
                            """
                            INSERT INTO tag_definitions (app_id, name, type, created_at) VALUES (?, ?, ?, strftime('%s'))
                            ON CONFLICT DO UPDATE SET type = type RETURNING type
                            """
                        ).first([.integer(id), .text(name), .integer(Int64(type.rawValue))]) { $0.int(0) }
                        if let stored, stored != Int64(type.rawValue) {
                            throw StoreError.invalid(
                                "apps[\(app.code)].tags.\(name) is declared \(type.name) but the database already holds it as \(TagType(rawValue: Int(stored))?.name ?? "another type")")
                        }
                    }
                }
            }
            appIDs = NameTable(ids)
            // The writer does not checkpoint by itself (a checkpoint's fsync would stall every waiting
            // request); the checkpointer thread does it beside it on its own connection.
            try connection.execute("PRAGMA wal_autocheckpoint=0")
            // Asked through the writer's connection before its thread starts; it stays open as long as this.
            walIndex = WALIndex(connection: connection)
            let committer = GroupCommitter(writer: Writer(connection: connection))
            self.committer = committer
            let readers = StripedLock<[SQLiteConnection]>(bits: 3, [])
            self.readers = readers
            checkpointer = try Checkpointer(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds,
                                            askWriter: { committer.requestCheckpoint() },
                                            releaseSnapshots: { Self.releaseSnapshots(of: readers) })
        } catch {
            throw Self.storeError(error)
        }
    }

    deinit {
        checkpointer.stop()
        committer.stop()
        for stripe in readers.all {
            stripe.withLock { pool in
                for connection in pool { connection.close() }
            }
        }
    }

    public func appID(_ code: String) throws(StoreError) -> Int64 {
        guard let id = appIDs[code] else { throw .unknownApplication(code) }
        return id
    }

    public func appCode(_ id: Int64) -> String? { appIDs.name(of: id) }

    /// The writer and the running request's place in its batch, while a request of the batch runs
    /// on this thread (`submitRequest`); nil elsewhere.
    var batchRequest: (writer: Writer, item: Int)? {
        guard committer.isCurrentThread, let item = committer.writer.item else { return nil }
        return (committer.writer, item)
    }

    /// Runs `body` in a write transaction (shared with other callers' bodies, each in its own
    /// savepoint) and returns once that transaction is committed. `oneStatement`: `body` changes
    /// the database with at most one statement and throws only when that statement fails, which
    /// SQLite then undoes by itself; inside `submitRequest` it runs without a savepoint of its own.
    func write<T: Sendable>(oneStatement: Bool = false, _ body: (Writer) throws -> T) throws(StoreError) -> T {
        if committer.isCurrentThread {
            // Inside `submitRequest`: part of the batch transaction already open on this thread.
            var value: T?
            let writer = committer.writer
            // What this write reads or changes comes after the device writes put off before it.
            writer.writeDeferred()
            do {
                // SQLite rolled the batch back by itself (SQLITE_FULL, IOERR, NOMEM): a statement now
                // would run on its own, outside the batch, while the batch's callers hear "failed".
                guard !writer.connection.isAutocommit else { throw GroupCommitter.rolledBack }
                if oneStatement {
                    value = try body(writer)
                } else {
                    try writer.inSavepoint { value = try body(writer) }
                }
            } catch {
                throw Self.storeError(error)
            }
            guard let value else { throw .invalid("write produced no result") }
            return value
        }
        let result = ResultBox<T>()
        do {
            try withoutActuallyEscaping(body) { escapable in
                // The closure only runs while this thread waits below, so its captures are never shared.
                let pending = PendingWrite { writer in result.value = try escapable(writer) }
                committer.submit(pending)
                if let error = pending.error { throw error }
            }
        } catch {
            throw Self.storeError(error)
        }
        guard let value = result.value else { throw .invalid("write produced no result") }
        return value
    }

    /// Runs a whole request on the writer thread, inside the next group transaction: every store
    /// write it makes joins that transaction, and `completion` receives its result only after the
    /// commit (or `onFailure()` when the commit fails). For request handlers that mostly write: one
    /// thread hand-off per request instead of a blocked thread per request.
    public func submitRequest<T: Sendable>(_ work: @escaping @Sendable () -> T, onFailure: @escaping @Sendable () -> T,
                                           completion: @escaping @Sendable (T) -> Void) {
        let answer = PendingAnswer()
        committer.enqueue(.request(PendingRequest(
            run: { answer.run(work, for: completion) },
            finish: { committed in answer.finish(committed: committed) { completion(onFailure()) } })))
    }

    /// Whether the writer's commits fail.
    var health: CommitHealth { committer.health }

    /// `VACUUM INTO path` from a read transaction: a consistent, compacted copy of the database as
    /// of one moment, taken while writers go on (they never wait for it). Refuses an existing file.
    func backup(to path: String) throws(StoreError) -> Int64 {
        guard !FileManager.default.fileExists(atPath: path) else { throw .invalid("\(path) exists; a backup never overwrites a file") }
        try read { connection in try connection.prepare("VACUUM INTO ?").run([.text(path)]) }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? nil
        return size ?? 0
    }

    /// Runs `body` on a pooled read connection, outside any transaction.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        try pooled { connection in
            Self.releaseSnapshot(of: connection)
            return try body(connection)
        }
    }

    /// Runs `body`, a read that needs no snapshot of its own, on a pooled read connection and sees
    /// every commit made before the call (by any connection of any process). The read transaction
    /// stays open after `body` while the WAL is wholly copied into the database file, and the next
    /// `readLatest` on the connection reuses it as long as nothing was committed since: a read
    /// transaction's begin and end (file locks on the WAL index) cost more than a small query. Such a
    /// snapshot reads the database file alone, so it never keeps the WAL from starting over; the
    /// checkpointer ends idle ones before each of its passes (`releaseSnapshots`).
    func readLatest<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        guard let walIndex else { return try read(body) }
        return try pooled { connection in
            let before = walIndex.read()
            if let held = connection.heldSnapshot {
                if held == before {
                    do {
                        return try body(connection)
                    } catch {
                        Self.releaseSnapshot(of: connection)
                        throw error
                    }
                }
                Self.releaseSnapshot(of: connection)
            }
            // Held only while the WAL is wholly copied back; otherwise one statement is its own transaction.
            guard before.backfilled else { return try body(connection) }
            try connection.statement("BEGIN")
            let value: T
            do {
                value = try body(connection)
            } catch {
                try? connection.statement("COMMIT")
                throw error
            }
            if !connection.isAutocommit, walIndex.read() == before {
                connection.heldSnapshot = before
            } else {
                try connection.statement("COMMIT")
            }
            return value
        }
    }

    /// Runs `body` with a connection taken from the pool and puts it back in the thread's stripe.
    /// The thread's own stripe is tried first, then the others, so that the pool holds no more
    /// connections than the most reads that ran at once; a new one when none is free.
    private func pooled<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        let stripe = readers.current
        var pooled = stripe.withLock { $0.popLast() }
        for other in readers.all where pooled == nil && other !== stripe {
            pooled = other.withLock { $0.popLast() }
        }
        let connection: SQLiteConnection
        if let pooled {
            connection = pooled
        } else {
            do {
                connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            } catch {
                throw Self.storeError(error)
            }
            openedReaders.withLock { $0.append(connection) }
        }
        defer { stripe.withLock { $0.append(connection) } }
        do {
            return try body(connection)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// The bytes the page caches of this database's connections hold: the writer's and the
    /// checkpointer's as their threads last measured them, the idle readers' measured now, and a
    /// reader in use as it was when last idle here.
    var pageCacheBytes: Int64 {
        for stripe in readers.all {
            stripe.withLock { pool in
                for connection in pool { connection.measurePageCache() }
            }
        }
        let readerBytes = openedReaders.withLock { opened in opened.reduce(0) { $0 + $1.pageCacheBytes.load(ordering: .relaxed) } }
        return readerBytes + committer.writer.connection.pageCacheBytes.load(ordering: .relaxed)
            + checkpointer.connection.pageCacheBytes.load(ordering: .relaxed)
    }

    /// How many reading connections are open, in the pool or in use.
    var readerCount: Int { openedReaders.withLock { $0.count } }

    /// How many pooled connections hold a read transaction open (`readLatest`).
    var heldSnapshots: Int { readers.all.reduce(0) { sum, stripe in sum + stripe.withLock { pool in pool.count { $0.heldSnapshot != nil } } } }

    /// Ends the read transaction `readLatest` left open on `connection`, if any.
    private static func releaseSnapshot(of connection: SQLiteConnection) {
        guard connection.heldSnapshot != nil else { return }
        connection.heldSnapshot = nil
        if !connection.isAutocommit { try? connection.statement("COMMIT") }
    }

    /// Ends the held read transactions of the connections now in the pool (none is in use meanwhile).
    private static func releaseSnapshots(of readers: StripedLock<[SQLiteConnection]>) {
        for stripe in readers.all {
            stripe.withLock { pool in
                for connection in pool { releaseSnapshot(of: connection) }
            }
        }
    }

    static func storeError(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError: return error
        case let error as SQLiteError: return .backend(error.failure)
        case let error as TagError: return .invalid(error.message)
        default: return .backend(SQLiteError(code: 1, message: "\(error)", context: "unexpected error").failure)
        }
    }
}

/// Holds a write's result until the submitting thread reads it. `@unchecked Sendable` invariant:
/// written by the committer thread before `done` is signalled, read by the submitter after.
final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// One caller's transaction body. `@unchecked Sendable` invariant: the body and `error` are used by
/// the committer thread only while the submitting thread is blocked on `done`.
final class PendingWrite: @unchecked Sendable {
    /// Cleared once run, so that nothing holds the caller's closure after the caller returns.
    var body: ((SQLiteDatabase.Writer) throws -> Void)?
    var error: (any Error)?
    let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping (SQLiteDatabase.Writer) throws -> Void) { self.body = body }
}

/// A whole request run on the committer thread (see `SQLiteDatabase.submitRequest`).
struct PendingRequest: Sendable {
    let run: @Sendable () -> Void
    let finish: @Sendable (_ committed: Bool) -> Void
}

/// The writer thread behind `SQLiteDatabase.write` and `submitRequest`.
///
/// `@unchecked Sendable` invariant: `writer` is touched only on the committer thread; the queue is
/// behind a mutex.
final class GroupCommitter: @unchecked Sendable {
    enum Item {
        case write(PendingWrite)
        case request(PendingRequest)
    }

    /// At most this many items share one transaction.
    static let maximumBatch = 256
    /// What a write of a batch that SQLite rolled back by itself fails with.
    static let rolledBack = SQLiteError(code: 1, message: "the batch transaction was rolled back", context: "group commit")

    let writer: SQLiteDatabase.Writer
    private let pending = Lock<[Item]>([])
    private let available = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let thread = Atomic<UInt>(0)
    /// Set by the checkpointer (see `Checkpointer`): checkpoint after the next batch.
    private let checkpointRequested = Atomic<Bool>(false)
    /// The error of the last batch while commits fail (nil while they succeed), and who hears of
    /// each change between the two.
    let health = CommitHealth()

    init(writer: SQLiteDatabase.Writer) {
        self.writer = writer
        let started = DispatchSemaphore(value: 0)
        let thread = Thread(named: "sqlite-writer") { [self] in
            self.thread.store(UInt(pthread_self()), ordering: .relaxed)
            started.signal()
            run()
            finished.signal()
        }
        thread.start()
        started.wait()
    }

    /// True on the committer thread, inside the batch transaction.
    var isCurrentThread: Bool { UInt(pthread_self()) == thread.load(ordering: .relaxed) }

    /// Queues `write` and blocks until it is committed or has failed.
    func submit(_ write: PendingWrite) {
        enqueue(.write(write))
        write.done.wait()
    }

    func enqueue(_ item: Item) {
        pending.withLock { $0.append(item) }
        available.signal()
    }

    /// Asks for a checkpoint on the writer connection after the next batch.
    func requestCheckpoint() {
        checkpointRequested.store(true, ordering: .relaxed)
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        available.signal()
        finished.wait()
        writer.connection.close()
    }

    private func run() {
        // The queue is taken by swapping buffers, so submitters never wait behind a copy.
        var taken: [Item] = []
        while true {
            available.wait()
            pending.withLock { swap(&$0, &taken) }
            if taken.isEmpty {
                if stopping.load(ordering: .relaxed) { return }
                continue
            }
            for start in stride(from: 0, to: taken.count, by: Self.maximumBatch) {
                let batch = taken[start..<min(start + Self.maximumBatch, taken.count)]
                let error = commit(batch)
                let committed = error == nil
                health.note(error.map { "\($0)" })
                // Answers go to a few I/O loops: each is woken once, with all of its answers.
                Wakeup.deferringSignals {
                    for (index, item) in batch.enumerated() {
                        switch item {
                        case .write(let write): write.done.signal()
                        case .request(let request):
                            let failedAlone = !writer.failedItems.isEmpty && writer.failedItems.contains(index)
                            request.finish(committed && !failedAlone)
                        }
                    }
                }
                writer.failedItems.removeAll()
            }
            taken.removeAll(keepingCapacity: true)
            writer.connection.measurePageCache()
            if checkpointRequested.exchange(false, ordering: .relaxed) {
                // Outside any transaction, and no other writer in this process: this copies every
                // frame no reader still needs, so that the next transaction restarts the WAL.
                try? writer.connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
            }
        }
    }


    /// Runs the batch in one transaction, each item in its own savepoint; nil when committed, else
    /// why not.
    private func commit(_ batch: ArraySlice<Item>) -> (any Error)? {
        let connection = writer.connection
        do {
            try connection.statement("BEGIN IMMEDIATE")
        } catch {
            for case .write(let write) in batch {
                write.error = error
                write.body = nil
            }
            return error
        }
        for (index, item) in batch.enumerated() {
            // SQLite rolls the whole transaction back by itself on some errors (SQLITE_FULL, IOERR,
            // NOMEM): then nothing of this batch will commit, so the remaining items must not run
            // (they would commit on their own, outside the batch, while their callers hear "failed").
            if connection.isAutocommit {
                if case .write(let write) = item {
                    write.error = write.error ?? Self.rolledBack
                    write.body = nil
                }
                continue
            }
            switch item {
            case .write(let write):
                defer { write.body = nil }
                writer.writeDeferred()
                do {
                    try writer.inSavepoint { try write.body?(writer) }
                } catch {
                    write.error = error
                }
            case .request(let request):
                writer.item = index
                request.run()
                writer.item = nil
            }
        }
        writer.writeDeferred()
        if connection.isAutocommit {
            writer.tagTypes.removeAll()
            for case .write(let write) in batch where write.error == nil { write.error = Self.rolledBack }
            return batch.lazy.compactMap { item -> (any Error)? in
                if case .write(let write) = item { return write.error } else { return nil }
            }.first ?? Self.rolledBack
        }
        do {
            try connection.statement("COMMIT")
            return nil
        } catch {
            try? connection.execute("ROLLBACK")
            writer.tagTypes.removeAll()
            for case .write(let write) in batch where write.error == nil { write.error = error }
            return error
        }
    }

}

/// Copies the WAL back into the database file every half second (a PASSIVE checkpoint, which never
/// blocks readers or the writer), so that the writer thread pays for few checkpoint fsyncs.
///
/// SQLite starts the WAL over from its beginning (rewriting the file in place instead of appending
/// to it) only when a write transaction begins after every frame has been copied back. Under
/// steady writes the writer appends while this thread copies, so that never happens and the WAL
/// grows without bound (180 MB in 5 s of the device-api benchmark's registerDevice), which also
/// slows every page lookup of readers. So this thread copies in passes until a pass leaves at most
/// `writerShare` frames behind, and then `askWriter` asks the writer to checkpoint once between
/// two transactions: it copies those few frames (a writer that had to copy tens of thousands
/// stalled its requests for up to 800 ms), and the next transaction starts the WAL over.
final class Checkpointer: Sendable {
    /// Background passes per half second at most.
    static let passes = 8
    /// The writer is asked to checkpoint when at most this many frames are left uncopied.
    static let writerShare: Int64 = 256
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// The checkpointer's own connection, used on its thread only.
    let connection: SQLiteConnection

    init(path: String, busyTimeoutMilliseconds: Int, askWriter: @escaping @Sendable () -> Void,
         releaseSnapshots: @escaping @Sendable () -> Void) throws(SQLiteError) {
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds, cacheKiB: 1024)
        self.connection = connection
        let thread = Thread(named: "sqlite-checkpt") { [self, connection] in
            while !stopping.load(ordering: .relaxed) {
                Thread.sleep(forTimeInterval: 0.5)
                // A held read snapshot would keep the pass from copying anything.
                releaseSnapshots()
                // Copy passes until what the writer appended meanwhile is small, so that the writer's
                // own checkpoint (it waits for it) only has a few frames left to copy.
                for _ in 0..<Self.passes {
                    // One row: busy flag, frames in the WAL, frames copied back.
                    guard let (logged, copied) = try? connection.prepare("PRAGMA wal_checkpoint(PASSIVE)").first([], { ($0.int(1), $0.int(2)) }),
                          logged > 0 else { break }
                    if logged - copied <= Self.writerShare {
                        askWriter()
                        break
                    }
                }
                connection.measurePageCache()
            }
            connection.close()
            finished.signal()
        }
        thread.start()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}

/// The shared store rules' view of the database: reads on the readers, snapshots in a read
/// transaction, writes on the one writer.
extension SQLiteDatabase: SQLDatabase {
    public func reading<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T { try read(body) }

    public func readingSnapshot<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        try read { connection in try connection.readTransaction { try body(connection) } }
    }

    public func writing<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        try write { try body($0.connection) }
    }
}
