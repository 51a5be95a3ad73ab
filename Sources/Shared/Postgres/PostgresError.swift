import Core

/// A failed PostgreSQL call. Keeps the server's SQLSTATE (or the one libpq implies, `08006`, when
/// the connection itself failed) and message; `context` says what Herald was doing, never the bound
/// values, which may hold tokens.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE, e.g. `40001` (serialization failure) or `23505` (unique violation).
    public let sqlState: String
    public let message: String
    public let context: String

    /// The SQLSTATE libpq's own connection failures are reported with (`connection_failure`).
    static let connectionFailure = "08006"

    /// `unique_violation`: an insert met a row with its key.
    static let uniqueViolation = "23505"

    /// `query_canceled`: the server's `statement_timeout` ended a statement, or Herald stopped
    /// waiting for an answer that did not come (and dropped the connection).
    static let queryCanceled = "57014"

    /// The SQLSTATE's class: its first two characters.
    public var sqlStateClass: Substring { sqlState.prefix(2) }

    /// The connection is unusable: it broke (class 08), or the server is shutting down, crashed or
    /// still starting (57P01, 57P02, 57P03). The connection is dropped and another opened later.
    public var isConnectionLost: Bool {
        sqlStateClass == "08" || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// The transaction was rolled back by the server and can simply be run again.
    public var isTransient: Bool {
        ["40001", "40P01"].contains(sqlState)
    }

    /// A value from a client that the server cannot store: too long (22001, 22026), out of range
    /// (22003: a counter a client's increments overflow), not valid text (22021, 22P05), or over a
    /// limit (class 54: an index entry over 2,704 bytes). Never retryable; the value is at fault,
    /// not the call. The other data exceptions (a malformed literal, 22P02; a division by zero) come
    /// only from the values and SQL Herald writes itself, so they are Herald's errors, not these.
    public var isDataError: Bool {
        Self.clientValueStates.contains(sqlState) || sqlStateClass == "54"
    }

    private static let clientValueStates: Set<String> = ["22001", "22026", "22003", "22021", "22P05"]

    /// True when the same call may succeed later: connection loss, serialization failures and
    /// deadlocks, too many connections, a lock or statement timeout.
    public var isRetryable: Bool {
        isConnectionLost || isTransient || ["53300", "55P03", Self.queryCanceled].contains(sqlState)
    }

    /// The SQLSTATE as a number, packed six bits per character as PostgreSQL's own `MAKE_SQLSTATE`
    /// does (the first character in the lowest bits): `BackendFailure.code` is an integer, and this
    /// packing is unique and reversible. The failure's message keeps the readable form.
    public var code: Int64 {
        var value: Int64 = 0
        for (index, byte) in sqlState.utf8.prefix(5).enumerated() {
            value |= Int64((Int(byte) - 48) & 0x3F) << (6 * index)
        }
        return value
    }

    public var description: String { "PostgreSQL error \(sqlState) (\(message)) while \(context)" }

    /// The same failure in the store protocols' terms.
    var failure: BackendFailure {
        BackendFailure(backend: "postgres", code: code, message: "SQLSTATE \(sqlState): \(message)", context: context,
                       isRetryable: isRetryable)
    }
}
