import Core

/// A failed SQLite call. Keeps SQLite's extended result code and message; `context` says what
/// Herald was doing (never the bound values, which may hold tokens).
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// SQLite's extended result code, e.g. 5 (`SQLITE_BUSY`) or 2067 (`SQLITE_CONSTRAINT_UNIQUE`).
    public let code: Int32
    public let message: String
    public let context: String

    /// The primary result code (the low byte of the extended code).
    public var primaryCode: Int32 { code & 0xFF }
    public var isBusy: Bool { primaryCode == 5 || primaryCode == 6 }

    public var description: String { "SQLite error \(code) (\(message)) while \(context)" }

    /// The same failure in the store protocols' terms; busy and locked are worth a retry.
    var failure: BackendFailure {
        BackendFailure(backend: "sqlite", code: Int64(code), message: message, context: context, isRetryable: isBusy)
    }
}
