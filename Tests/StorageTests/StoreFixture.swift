import Foundation
import Testing
import Core
import Postgres
import SQLite
import Storage
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
        let backend: any StoreBackend
        var devices: any DeviceStore { backend.devices }
        var campaigns: any CampaignStore { backend.campaigns }
        var analytics: any AnalyticsStore { backend.analytics }
        var richMedia: any RichMediaStore { backend.richMedia }
    }

    /// Opens the database (again) as Herald does (`Storage.open`), registering `apps`.
    func open(apps: [AppConfiguration]) throws -> Stores {
        var configuration = Configuration()
        configuration.database = DatabaseSettings(path: folder.file("h.sqlite"))
        configuration.database.url = url
        configuration.database.poolSize = 4
        configuration.apps = apps
        return Stores(backend: try Storage.open(configuration))
    }

    /// The single number a read-only `SELECT count(*) …` without parameters returns, read beside the stores.
    func count(_ sql: String) throws -> Int {
        if let url {
            let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
            return try connection.rows(sql) { Int($0.optionalText(0) ?? "") ?? -1 }.first ?? -1
        }
        let connection = try SQLiteConnection(path: folder.file("h.sqlite"), busyTimeoutMilliseconds: 2000, readOnly: true)
        defer { connection.close() }
        return try connection.prepare(sql).rows([]) { Int($0.optionalText(0) ?? "") ?? -1 }.first ?? -1
    }

    /// Runs SQL that changes the schema beside the stores (a test's failing trigger), in the backend's dialect.
    func execute(sqlite: String, postgres: String) throws {
        if let url {
            try PostgresConnection(PostgresConnectionSettings(url: url)).execute(postgres)
            return
        }
        let connection = try SQLiteConnection(path: folder.file("h.sqlite"), busyTimeoutMilliseconds: 2000)
        defer { connection.close() }
        try connection.execute(sqlite)
    }

    func devices(apps: [AppConfiguration]) throws -> any DeviceStore { try open(apps: apps).devices }
}
