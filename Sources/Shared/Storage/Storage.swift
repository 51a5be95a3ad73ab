import Core
import Foundation
import SQLite

/// Opens the store backend the configuration names. Ingest and workers call this and see only the
/// store protocols; a new backend is a new target and one more case here.
public enum Storage {
    /// Opens (creating if needed) the database of `configuration.database` and registers the
    /// configured applications.
    public static func open(_ configuration: Configuration) throws(StoreError) -> any StoreBackend {
        let folder = (configuration.database.path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .backend(BackendFailure(backend: "sqlite", code: 0, message: error.localizedDescription,
                                          context: "creating the database folder", isRetryable: false))
        }
        return try SQLiteBackend(database: configuration.database, apps: configuration.apps)
    }
}
