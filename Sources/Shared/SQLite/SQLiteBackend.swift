import Core

/// The SQLite file and the three stores over it (the embedded default backend).
public final class SQLiteBackend: StoreBackend {
    public let database: SQLiteDatabase
    public let devices: any DeviceStore
    public let campaigns: any CampaignStore
    public let analytics: any AnalyticsStore

    public init(database: DatabaseSettings, apps: [AppConfiguration]) throws(StoreError) {
        self.database = try SQLiteDatabase(path: database.path, busyTimeoutMilliseconds: database.busyTimeoutMilliseconds, apps: apps)
        devices = SQLiteDeviceStore(database: self.database)
        campaigns = SQLiteCampaignStore(database: self.database)
        analytics = SQLiteAnalyticsStore(database: self.database)
    }

    public func submitRequest<T: Sendable>(_ work: @escaping @Sendable () -> T, onFailure: @escaping @Sendable () -> T,
                                           completion: @escaping @Sendable (T) -> Void) {
        database.submitRequest(work, onFailure: onFailure, completion: completion)
    }
}
