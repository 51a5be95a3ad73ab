import Core
import StoreCore
import Foundation

/// The SQLite file and the stores over it (the embedded default backend).
public final class SQLiteBackend: StoreBackend {
    private let database: SQLiteDatabase
    public let devices: any DeviceStore
    public let campaigns: any CampaignStore
    public let analytics: any AnalyticsStore
    public let richMedia: any RichMediaStore

    /// Opens the file at `database.path`, creating it and its folder if needed.
    public init(database settings: DatabaseSettings, apps: [AppConfiguration]) throws(StoreError) {
        let folder = (settings.path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .backend(BackendFailure(backend: "sqlite", code: 0, message: error.localizedDescription,
                                          context: "creating the database folder", isRetryable: false))
        }
        database = try SQLiteDatabase(path: settings.path, busyTimeoutMilliseconds: settings.busyTimeoutMilliseconds, apps: apps,
                                      synchronousFull: settings.synchronousFull, cacheMiB: settings.cacheMiB)
        devices = SQLiteDeviceStore(database: database)
        campaigns = SQLiteCampaignStore(database: database)
        analytics = SQLiteAnalyticsStore(database: database)
        richMedia = SQLRichMediaStore(database: database) { try SQLiteDeviceStore.insert($0, appIDs: $1, now: $2, $3) }
    }

    public func submitRequest<T: Sendable>(_ work: @escaping @Sendable () -> T, onFailure: @escaping @Sendable () -> T,
                                           completion: @escaping @Sendable (T) -> Void) {
        database.submitRequest(work, onFailure: onFailure, completion: completion)
    }

    public var readsWait: Bool { false }

    public func submitRead<T: Sendable>(_ work: @escaping @Sendable () -> T, completion: @escaping @Sendable (T) -> Void) {
        completion(work())
    }

    public func backup(to path: String) throws(StoreError) -> Int64 {
        try database.backup(to: path)
    }

    public var commitFailure: String? { database.health.commitFailure }

    public var clientMemoryBytes: Int64 { database.pageCacheBytes }

    public func watchCommits(_ handler: @escaping @Sendable (String?) -> Void) {
        database.health.watch(handler)
    }

    /// The system's clock: every process of a SQLite database runs on its one host.
    public func makeClock(logger: Logger) throws(StoreError) -> any Clock { SystemClock() }
}
