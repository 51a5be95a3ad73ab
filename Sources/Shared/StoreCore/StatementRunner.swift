import Core

/// A connection that runs the statements the backends share. Such a statement numbers its
/// parameters `$1`, `$2`, … and holds no other `$`: PostgreSQL takes it as it is, SQLite as `?1`,
/// `?2`, …. Each backend's transactions and snapshots stay its own; the shared queries run inside them.
public protocol StatementRunner {
    associatedtype Row: StoredRow
    associatedtype Value: BoundValue

    /// Runs a query and maps each row.
    func select<T>(_ sql: String, _ values: [Value], _ transform: (Row) throws -> T) throws -> [T]
    /// Runs a query and maps its first row; nil when it has none.
    func selectFirst<T>(_ sql: String, _ values: [Value], _ transform: (Row) throws -> T) throws -> T?
    /// Runs a statement that returns no rows.
    func execute(_ sql: String, _ values: [Value]) throws

    /// What follows a text column in `ORDER BY` to order it by its bytes (SQLite's own order).
    var byteOrder: String { get }
}
