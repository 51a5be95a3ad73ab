import Synchronization

/// One SQLite file (WAL) shared by the stores of a process. Writes go through a single connection
/// under a lock, each in its own `BEGIN IMMEDIATE` transaction; reads use a small pool of
/// connections, so they never wait for a writer.
public final class SQLiteDatabase: Sendable {
    /// The writer connection and what it caches. Tag types never change once defined, so caching
    /// them is safe across processes. `@unchecked Sendable` invariant: only touched inside
    /// `writer.withLock`, so by one thread at a time.
    public final class Writer: @unchecked Sendable {
        let connection: SQLiteConnection
        var tagTypes: [Int64: [String: TagType]] = [:]
        init(connection: SQLiteConnection) { self.connection = connection }
    }

    private let writer: Mutex<Writer>
    private let readers = Mutex<[SQLiteConnection]>([])
    private let path: String
    private let busyTimeoutMilliseconds: Int
    /// Application code → row id, fixed at start.
    let appIDs: [String: Int64]

    /// Opens the database, applies migrations, and registers `apps` with their declared tag types.
    public init(path: String, busyTimeoutMilliseconds: Int, apps: [AppConfiguration]) throws(StoreError) {
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        do {
            let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            try Schema.migrate(connection)
            var ids: [String: Int64] = [:]
            try connection.writeTransaction {
                for app in apps {
                    let id = try connection.prepare(
                        "INSERT INTO applications (code, name) VALUES (?, ?) ON CONFLICT (code) DO UPDATE SET name = excluded.name RETURNING id"
                    ).first([.text(app.code), .text(app.name)]) { $0.int(0) }
                    ids[app.code] = id
                }
            }
            appIDs = ids
            writer = Mutex(Writer(connection: connection))
        } catch let error as SQLiteError {
            throw .database(error)
        } catch {
            throw .invalid("\(error)")
        }
    }

    deinit {
        writer.withLock { $0.connection.close() }
        readers.withLock { pool in
            for connection in pool { connection.close() }
        }
    }

    func appID(_ code: String) throws(StoreError) -> Int64 {
        guard let id = appIDs[code] else { throw .unknownApplication(code) }
        return id
    }

    func appCode(_ id: Int64) -> String? { appIDs.first { $0.value == id }?.key }

    /// Runs `body` in one write transaction on the writer connection; maps errors to `StoreError`.
    func write<T: Sendable>(_ body: (Writer) throws -> T) throws(StoreError) -> T {
        do {
            return try writer.withLock { writer in
                try writer.connection.writeTransaction { try body(writer) }
            }
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Runs `body` on a pooled read connection.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        let pooled = readers.withLock { $0.popLast() }
        let connection: SQLiteConnection
        do {
            connection = try pooled ?? SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        } catch {
            throw Self.storeError(error)
        }
        defer { readers.withLock { $0.append(connection) } }
        do {
            return try body(connection)
        } catch {
            throw Self.storeError(error)
        }
    }

    static func storeError(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError: return error
        case let error as SQLiteError: return .database(error)
        case let error as TagError: return .invalid(error.message)
        default: return .database(SQLiteError(code: 1, message: "\(error)", context: "unexpected error"))
        }
    }
}
