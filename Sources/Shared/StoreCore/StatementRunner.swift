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
    /// Runs a statement that returns no rows; returns how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ values: [Value]) throws -> Int

    /// What follows a text column in `ORDER BY` to order it by its bytes (SQLite's own order).
    var byteOrder: String { get }
    /// The scalar function that returns the larger of its arguments (SQLite's two-argument `max`).
    var greatest: String { get }
    /// What follows a `SELECT` of rows of `table` (its name or alias in `FROM`) that the transaction
    /// goes on to change or delete, so that no other transaction changes them first; the rows of
    /// the other tables it joins are not locked. Nothing where a write transaction holds the whole
    /// database (SQLite).
    func lockForUpdate(of table: String) -> String
    /// What follows a `SELECT` of rows that must not change until the transaction commits.
    var lockForShare: String { get }

    /// What follows a table's name in `FROM` or `UPDATE` to make the statement use `index`, where
    /// the backend's planner needs telling; nothing elsewhere.
    func indexedBy(_ index: String) -> String

    /// The first 16 characters of the text `expression`, written as the `devices_by_token` index
    /// writes them, so that a lookup by push token uses it.
    func tokenPrefix(_ expression: String) -> String

    /// A `FROM` item `e` with the columns `entry` and `position` (from 1): the texts of the list
    /// bound (`BoundValue.textList`) at `placeholder`, in order.
    func entries(of placeholder: String) -> String
}
