import Foundation
import Testing
import Core
import Postgres
import SQLite
import TestSupport

/// The store backends every contract test runs against.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }
}

/// A fresh, empty database of one backend (a SQLite file in a temporary folder, or a schema of
/// the shared test server), opened as often as a test likes with the applications it names.
final class StoreFixture {
    let backend: Backend
    private let folder: TemporaryDirectory
    private let url: String?

    init(_ backend: Backend) throws {
        self.backend = backend
        folder = try TemporaryDirectory()
        url = backend == .postgres ? try PostgresServer.shared().makeSchema() : nil
    }

    /// The stores over one open database.
    struct Stores {
        let devices: any DeviceStore
        let campaigns: any CampaignStore
        let analytics: any AnalyticsStore
    }

    /// Opens the database (again), registering `apps`.
    func open(apps: [AppConfiguration]) throws -> Stores {
        switch backend {
        case .sqlite:
            let database = try SQLiteDatabase(path: folder.file("h.sqlite"), busyTimeoutMilliseconds: 1000, apps: apps)
            return Stores(devices: SQLiteDeviceStore(database: database), campaigns: SQLiteCampaignStore(database: database),
                          analytics: SQLiteAnalyticsStore(database: database))
        case .postgres:
            let database = try PostgresDatabase(settings: PostgresConnectionSettings(url: url ?? ""), poolSize: 4,
                                                acquireTimeoutMilliseconds: 5000, apps: apps)
            return Stores(devices: PostgresDeviceStore(database: database), campaigns: PostgresCampaignStore(database: database),
                          analytics: PostgresAnalyticsStore(database: database))
        }
    }

    func devices(apps: [AppConfiguration]) throws -> any DeviceStore { try open(apps: apps).devices }
}
