import Foundation
import Testing
import Core
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

    func devices(apps: [AppConfiguration]) throws -> any DeviceStore { try open(apps: apps).devices }
}
