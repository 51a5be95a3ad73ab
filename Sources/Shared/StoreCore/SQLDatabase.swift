import Core

/// A backend's database as the shared store rules use it: its applications, and connections for
/// reading, for reading one snapshot, and for writing. How it pools, locks and commits is its own.
public protocol SQLDatabase: Sendable {
    associatedtype Connection: StatementRunner

    /// The id of the application `code`; `StoreError.unknownApplication` when it is not configured.
    func appID(_ code: String) throws(StoreError) -> Int64
    /// The code of the application `id`.
    func appCode(_ id: Int64) -> String?

    /// Runs `body` on a connection for reading; each statement sees what is committed when it starts.
    func reading<T>(_ body: (Connection) throws -> T) throws(StoreError) -> T
    /// Runs `body` on a connection whose statements all see one committed state.
    func readingSnapshot<T>(_ body: (Connection) throws -> T) throws(StoreError) -> T
    /// Runs `body` in a write transaction, committed when it returns and undone when it throws.
    func writing<T: Sendable>(_ body: (Connection) throws -> T) throws(StoreError) -> T
}
