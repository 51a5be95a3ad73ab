import Core
import Postgres
import SQLite

/// Opens the store backend the configuration names. Ingest and workers call this and see only the
/// store protocols; a new backend is a new target and one more case here.
public enum Storage {
    /// Opens (creating if needed) the database of `configuration.database`, PostgreSQL when
    /// `database.url` is set and else the SQLite file at `database.path`, and registers the
    /// configured applications. What the database server has to say (PostgreSQL's notices) goes to `logger`.
    public static func open(_ configuration: Configuration, logger: Logger? = nil) throws(StoreError) -> any StoreBackend {
        if configuration.database.url != nil {
            return try PostgresBackend(database: configuration.database, apps: configuration.apps, logger: logger)
        }
        return try SQLiteBackend(database: configuration.database, apps: configuration.apps)
    }
}
