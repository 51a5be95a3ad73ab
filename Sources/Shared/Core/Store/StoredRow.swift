/// A result row as both store backends expose it, so that a query both run with the same text
/// (placeholders `$1`, `$2`, … in order of first use, which SQLite binds by position too) is read
/// from its columns in one place.
package protocol StoredRow {
    func text(_ column: Int32) -> String
    func optionalText(_ column: Int32) -> String?
    func int(_ column: Int32) -> Int64
}
