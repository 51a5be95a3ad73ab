import Foundation
import Core
import StoreCore

/// A PostgreSQL database and the stores over it (`database.url`).
public final class PostgresBackend: StoreBackend {
    private let database: PostgresDatabase
    private let deviceStore: PostgresDeviceStore
    public let devices: any DeviceStore
    public let campaigns: any CampaignStore
    public let analytics: any AnalyticsStore
    public let richMedia: any RichMediaStore

    /// Connects to `database.url` (with the password of `database.password_file`, if set), applies
    /// the migrations and registers `apps`. `applicationName` shows in `pg_stat_activity`; the
    /// server's notices go to `logger`.
    public init(database settings: DatabaseSettings, apps: [AppConfiguration], logger: Logger? = nil,
                applicationName: String = ProcessInfo.processInfo.processName) throws(StoreError) {
        var connection = PostgresConnectionSettings(url: settings.url ?? "", applicationName: applicationName)
        connection.logger = logger
        connection.statementTimeoutMilliseconds = settings.statementTimeoutMilliseconds
        if let file = settings.passwordFile {
            do {
                var password = try String(contentsOfFile: file, encoding: .utf8)
                while password.last?.isNewline == true { password.removeLast() }
                connection.password = password
            } catch {
                throw .backend(BackendFailure(backend: "postgres", code: 0, message: "cannot read \(file): \(error.localizedDescription)",
                                              context: "reading database.password_file", isRetryable: false))
            }
        }
        database = try PostgresDatabase(settings: connection, poolSize: settings.poolSize,
                                        acquireTimeoutMilliseconds: settings.busyTimeoutMilliseconds, apps: apps)
        deviceStore = PostgresDeviceStore(database: database)
        devices = deviceStore
        campaigns = PostgresCampaignStore(database: database)
        analytics = PostgresAnalyticsStore(database: database, logger: logger)
        richMedia = SQLRichMediaStore(database: database) { try PostgresDeviceStore.insert($0, appIDs: $1, now: $2, $3) }
    }

    /// Runs `work` on the device write batcher's thread: its batchable writes join the next batch,
    /// and `completion` gets its result once they are committed (`onFailure()` when they could not
    /// be). Work that needs the database otherwise runs on a request thread, where each store write
    /// commits on its own before it returns.
    public func submitRequest<T: Sendable>(_ work: @escaping @Sendable () -> T, onFailure: @escaping @Sendable () -> T,
                                           completion: @escaping @Sendable (T) -> Void) {
        let answer = PendingAnswer()
        deviceStore.submit(DeviceWriteBatcher.Request(
            run: { answer.run(work, for: completion) },
            committed: { answer.finish(committed: true) { completion(onFailure()) } },
            failed: { completion(onFailure()) },
            elsewhere: { [database] in database.submitRequest(work, completion: completion) }))
    }

    public var readsWait: Bool { true }

    public func submitRead<T: Sendable>(_ work: @escaping @Sendable () -> T, completion: @escaping @Sendable (T) -> Void) {
        database.submitRead(work, completion: completion)
    }

    /// `herald-ingest --backup` copies a SQLite file; a PostgreSQL database is copied with the
    /// server's own tools, which take a consistent snapshot while Herald keeps running.
    public func backup(to path: String) throws(StoreError) -> Int64 {
        throw .invalid("--backup copies a SQLite database only; with database.url (PostgreSQL) use pg_dump, "
            + "e.g. pg_dump --format=custom --file=herald.dump with the same connection settings")
    }

    public var commitFailure: String? { database.health.commitFailure }

    public var clientMemoryBytes: Int64 { 0 }

    public func watchCommits(_ handler: @escaping @Sendable (String?) -> Void) {
        database.health.watch(handler)
    }

    /// The server's clock (`PostgresClock`), read through this host's.
    public func makeClock(logger: Logger) throws(StoreError) -> any Clock {
        try PostgresClock(database: database, local: SystemClock(), logger: logger)
    }
}
