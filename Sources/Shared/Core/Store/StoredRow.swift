/// A result row as both store backends expose it, so that a query both run with the same text
/// (placeholders `$1`, `$2`, … in order of first use, which SQLite binds by position too) is read
/// from its columns in one place.
public protocol StoredRow {
    func text(_ column: Int32) -> String
    func optionalText(_ column: Int32) -> String?
    func int(_ column: Int32) -> Int64
    func optionalInt(_ column: Int32) -> Int64?
    func double(_ column: Int32) -> Double
    /// A byte string column (SQLite's BLOB, PostgreSQL's bytea).
    func bytes(_ column: Int32) -> [UInt8]
    /// A boolean column (PostgreSQL's `boolean`, SQLite's 0 or 1).
    func bool(_ column: Int32) -> Bool
}
