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

    /// Opens the database (again), registering `apps`.
    func devices(apps: [AppConfiguration]) throws -> any DeviceStore {
        switch backend {
        case .sqlite:
            return try SQLiteDeviceStore(path: folder.file("h.sqlite"), busyTimeoutMilliseconds: 1000, apps: apps)
        case .postgres:
            let database = try PostgresDatabase(settings: PostgresConnectionSettings(url: url ?? ""), poolSize: 4,
                                                acquireTimeoutMilliseconds: 5000, apps: apps)
            return PostgresDeviceStore(database: database)
        }
    }
}
