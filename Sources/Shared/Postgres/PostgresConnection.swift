internal import CLibPQ
import Core
import StoreCore
#if canImport(Glibc)
import Glibc
#endif

/// How to reach the server: the libpq URI of `database.url` and what Herald adds to it.
public struct PostgresConnectionSettings: Sendable {
    /// `postgresql://user:pass@host:port/db?param=value`; libpq reads every parameter it documents.
    public var url: String
    /// From `database.password_file`; overrides a password in the URL. libpq itself reads
    /// `PGPASSWORD` (and `~/.pgpass`) when neither gives one.
    public var password: String?
    /// Shown in `pg_stat_activity`.
    public var applicationName: String
    /// How long one connection attempt may take before it fails (libpq `connect_timeout`).
    public var connectTimeoutSeconds = 5
    /// `database.statement_timeout_ms`: every connection's `statement_timeout` and
    /// `idle_in_transaction_session_timeout`, and one second more is how long a call waits for the
    /// server's answer (`PostgresConnection.unbounded` lifts both). Nil: no bound.
    public var statementTimeoutMilliseconds: Int?
    /// Where the server's notices and warnings (`RAISE WARNING`, `terminating connection due to
    /// immediate shutdown command`) are logged; nil drops them.
    public var logger: Logger?
    /// Whether the server plans each prepared statement once for all parameters
    /// (`plan_cache_mode=force_generic_plan`) instead of again for each execution where it expects
    /// that to pay (as it does for a statement over an array parameter). Options in the URL win.
    public var genericPlans = false

    public init(url: String, password: String? = nil, applicationName: String = "herald") {
        self.url = url
        self.password = password
        self.applicationName = applicationName
    }

    /// Keyword/value pairs for `PQconnectdbParams`. Herald's defaults come before the URL, so that
    /// the URL's own parameters win; the password file comes after it, so that it wins.
    var keywords: [(String, String)] {
        var pairs: [(String, String)] = [
            ("connect_timeout", String(connectTimeoutSeconds)),
            ("application_name", applicationName),
            // A server that vanishes without closing the connection (host down, network cut) is
            // noticed within seconds instead of the kernel's two hours.
            ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
            ("tcp_user_timeout", "30000"),
        ]
        if genericPlans { pairs.append(("options", "-c plan_cache_mode=force_generic_plan")) }
        pairs.append(("dbname", url))
        if let password { pairs.append(("password", password)) }
        return pairs
    }
}

/// Owns one `PGconn*` and its prepared statements.
///
/// Every statement with parameters is prepared once per connection (named `h1`, `h2` … in a cache
/// keyed by its text) and then executed with `PQsendQueryPrepared`, so the server parses and plans it
/// once. Calls block: they run on Herald's own threads, never on the cooperative pool.
///
/// Every call is bounded (with `statementTimeoutMilliseconds`): the server cancels a statement
/// that runs too long, and a server that answers nothing at all (stopped, or the network went
/// silent without a reset) is waited for one second longer; then the connection is closed and the
/// call fails with SQLSTATE 57014, retryable. Asking the server to cancel (`PQcancel`) would wait
/// for that same server, so the connection is dropped instead.
///
/// `@unchecked Sendable` invariant: a connection is used by one thread at a time (the pool hands it
/// out under a lock) and closed exactly once by its owner.
public final class PostgresConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    private var statements: [String: String] = [:]
    private var statementCount = 0
    private let logger: Logger?
    private let statementTimeoutMilliseconds: Int?
    /// How long a call waits for the server's answer; nil waits as long as it takes.
    private var answerDeadline: Duration?

    /// Connects (blocking, at most `connectTimeoutSeconds` per host tried).
    public init(_ settings: PostgresConnectionSettings) throws(PostgresError) {
        logger = settings.logger
        statementTimeoutMilliseconds = settings.statementTimeoutMilliseconds
        answerDeadline = settings.statementTimeoutMilliseconds.map { .milliseconds($0 + 1000) }
        let pairs = settings.keywords
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            for pointer in keywords + values { free(pointer) }
        }
        let connection = (keywords.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { keywordPointers in
            (values.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { valuePointers in
                PQconnectdbParams(keywordPointers.baseAddress, valuePointers.baseAddress, 1)
            }
        }
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = connection.map { Self.message(PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(connection)
            throw PostgresError(sqlState: PostgresError.connectionFailure, message: message, context: "connecting to the database")
        }
        handle = connection
        // libpq would print notices to standard error, outside Herald's log format. The receiver
        // runs on the thread that uses the connection, inside a libpq call, while `self` owns it.
        PQsetNoticeReceiver(connection, { argument, notice in
            guard let argument, let notice else { return }
            Unmanaged<PostgresConnection>.fromOpaque(argument).takeUnretainedValue().log(notice: notice)
        }, Unmanaged.passUnretained(self).toOpaque())
        // Sending never blocks either: `awaitResult` flushes within the deadline.
        PQsetnonblocking(connection, 1)
        if let milliseconds = statementTimeoutMilliseconds {
            do {
                try execute(Self.timeouts(milliseconds))
            } catch {
                close()
                throw error
            }
        }
    }

    /// Logs a notice the server sent: warnings at WARNING, the chatter (`relation already exists,
    /// skipping` while migrating) at DEBUG and VERBOSE.
    private func log(notice: OpaquePointer) {
        guard let logger else { return }
        let severity = herald_pq_severity(notice).map { String(cString: $0) } ?? "NOTICE"
        let level: LogLevel = switch severity {
        case "WARNING": .warning
        case "NOTICE", "INFO": .debug
        case "LOG", "DEBUG": .verbose
        default: .error
        }
        let message = herald_pq_primary_message(notice).map { String(cString: $0) } ?? Self.message(PQresultErrorMessage(notice))
        logger.log(level, "PostgreSQL server notice", ["postgres.severity": severity, "postgres.sqlstate":
                    herald_pq_sqlstate(notice).map { String(cString: $0) } ?? "", "postgres.message": message])
    }

    /// Runs `body` waiting at most `limit` for each answer, when that is sooner than the statement
    /// timeout allows: for the health check, which must answer before a load balancer gives up.
    public func answering<T>(within limit: Duration, _ body: () throws -> T) rethrows -> T {
        let deadline = answerDeadline
        answerDeadline = min(limit, deadline ?? limit)
        defer { answerDeadline = deadline }
        return try body()
    }

    /// The server-side bounds of a session.
    private static func timeouts(_ milliseconds: Int) -> String {
        "SET statement_timeout = \(milliseconds); SET idle_in_transaction_session_timeout = \(milliseconds)"
    }

    /// Runs `body` without the statement timeout and the answer deadline: for the migrations at
    /// start, which may rewrite large tables, and the wait for another process's migration lock.
    public func unbounded<T>(_ body: () throws -> T) throws -> T {
        guard let milliseconds = statementTimeoutMilliseconds else { return try body() }
        try execute(Self.timeouts(0))
        let deadline = answerDeadline
        answerDeadline = nil
        let outcome = Result { try body() }
        answerDeadline = deadline
        // A connection that cannot be bounded again is not handed out again.
        do {
            try execute(Self.timeouts(milliseconds))
        } catch {
            close()
        }
        return try outcome.get()
    }

    /// Closes the connection. Safe to call more than once; later calls fail.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        statements.removeAll()
    }

    deinit { close() }

    /// False once the connection broke (or was closed): it must be replaced, not reused.
    public var isHealthy: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// True inside a transaction block (also one that failed and awaits its ROLLBACK).
    public var inTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Runs one or more statements without parameters (the simple query protocol): migrations,
    /// transaction control.
    public func execute(_ sql: String) throws(PostgresError) {
        guard let handle else { throw closed(sql) }
        let context = "executing \(sql.prefix(60))"
        guard PQsendQuery(handle, sql) == 1 else { throw unsent(handle, context) }
        let result = try awaitResult(handle, context: context)
        defer { PQclear(result) }
        try check(result, context: context)
    }

    /// Runs a statement that returns no rows of interest; returns how many rows it changed.
    @discardableResult
    public func run(_ sql: String, _ values: [PostgresValue] = []) throws(PostgresError) -> Int {
        let result = try query(sql, values)
        return result.affectedRows
    }

    /// Runs a query and maps each row. `plannedEachTime`: see `query`.
    public func rows<T>(_ sql: String, _ values: [PostgresValue] = [], plannedEachTime: Bool = false,
                        _ transform: (PostgresRow) throws -> T) throws -> [T] {
        let result = try query(sql, values, plannedEachTime: plannedEachTime)
        var mapped: [T] = []
        mapped.reserveCapacity(result.count)
        for index in 0..<result.count { mapped.append(try transform(result[index])) }
        return mapped
    }

    /// The first row mapped, or nil.
    public func first<T>(_ sql: String, _ values: [PostgresValue] = [], _ transform: (PostgresRow) throws -> T) throws -> T? {
        let result = try query(sql, values)
        return result.count > 0 ? try transform(result[0]) : nil
    }

    /// Runs `sql` as a prepared statement (preparing it on first use) with `values` bound to `$1`…`$n`.
    /// With `plannedEachTime`, the server plans it for these values and the tables as they are now,
    /// every time (an unnamed statement): for a statement whose cached plan could go stale, as one
    /// made while a table it reads was empty does once the table fills (about 0.3 ms more per run
    /// of a campaign's page query).
    public func query(_ sql: String, _ values: [PostgresValue], plannedEachTime: Bool = false) throws(PostgresError) -> PostgresResult {
        guard let handle else { throw closed(sql) }
        let name = plannedEachTime ? nil : try prepared(sql, handle)
        let parameters = ParameterBuffer(values)
        let context = "running \(sql.prefix(60))"
        let sent = parameters.withPointers { pointers in
            if let name {
                return PQsendQueryPrepared(handle, name, Int32(values.count), pointers, parameters.lengths, parameters.formats, 0)
            }
            return PQsendQueryParams(handle, sql, Int32(values.count), nil, pointers, parameters.lengths, parameters.formats, 0)
        }
        guard sent == 1 else { throw unsent(handle, context) }
        let result = try awaitResult(handle, context: context)
        do {
            try check(result, context: context)
        } catch {
            PQclear(result)
            throw error
        }
        // `check` guarantees a result.
        return PostgresResult(result!)
    }

    /// The name of the prepared statement for `sql`, preparing it when new.
    private func prepared(_ sql: String, _ handle: OpaquePointer) throws(PostgresError) -> String {
        if let name = statements[sql] { return name }
        // Targeting builds SQL per message shape: bound the cache so that long-lived connections don't grow.
        if statements.count >= 512 {
            try execute("DEALLOCATE ALL")
            statements.removeAll()
        }
        statementCount += 1
        let name = "h\(statementCount)"
        let context = "preparing \(sql.prefix(60))"
        guard PQsendPrepare(handle, name, sql, 0, nil) == 1 else { throw unsent(handle, context) }
        let result = try awaitResult(handle, context: context)
        defer { PQclear(result) }
        try check(result, context: context)
        statements[sql] = name
        return name
    }

    // MARK: - Waiting for the server

    /// Sends what libpq holds and collects the command's answer: its last result, as `PQexec` returns
    /// it. Throws when the connection broke or the server did not answer within `answerDeadline`;
    /// either closes the connection.
    private func awaitResult(_ handle: OpaquePointer, context: String) throws(PostgresError) -> OpaquePointer? {
        let deadline = answerDeadline.map { ContinuousClock.now + $0 }
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            guard flushed == 1 else { throw broken(handle, context) }
            // The server may be waiting for us to read before it reads more (libpq's advice).
            let ready = try wait(handle, for: Int16(POLLIN | POLLOUT), until: deadline, context: context)
            if ready & Int16(POLLIN) != 0, PQconsumeInput(handle) != 1 { throw broken(handle, context) }
        }
        var last: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                do {
                    _ = try wait(handle, for: Int16(POLLIN), until: deadline, context: context)
                } catch {
                    PQclear(last)
                    throw error
                }
                guard PQconsumeInput(handle) == 1 else {
                    PQclear(last)
                    throw broken(handle, context)
                }
            }
            guard let next = PQgetResult(handle) else { return last }
            PQclear(last)
            last = next
        }
    }

    /// Waits until the socket is ready for `events`; returns the events that are. Past `deadline`,
    /// gives the connection up.
    private func wait(_ handle: OpaquePointer, for events: Int16, until deadline: ContinuousClock.Instant?,
                      context: String) throws(PostgresError) -> Int16 {
        var descriptor = pollfd(fd: PQsocket(handle), events: events, revents: 0)
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - .now
                guard left > .zero else {
                    close()
                    let waited = answerDeadline.map(Self.milliseconds) ?? 0
                    throw PostgresError(sqlState: PostgresError.queryCanceled,
                                        message: "no answer from the server within \(waited) ms; the connection was dropped", context: context)
                }
                timeout = Int32(min(Self.milliseconds(left) + 1, 60_000))
            }
            let ready = poll(&descriptor, 1, timeout)
            if ready > 0 { return descriptor.revents }
            if ready < 0 && errno != EINTR { throw broken(handle, context) }
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    /// The error of a connection whose socket failed; closes it.
    private func broken(_ handle: OpaquePointer, _ context: String) -> PostgresError {
        let error = PostgresError(sqlState: PostgresError.connectionFailure, message: Self.message(PQerrorMessage(handle)), context: context)
        close()
        return error
    }

    /// The error of a command libpq would not send (the connection broke).
    private func unsent(_ handle: OpaquePointer, _ context: String) -> PostgresError {
        guard PQstatus(handle) == CONNECTION_OK else { return broken(handle, context) }
        return PostgresError(sqlState: "XX000", message: Self.message(PQerrorMessage(handle)), context: context)
    }

    /// Throws the error a result carries, if any.
    private func check(_ result: OpaquePointer?, context: String) throws(PostgresError) {
        guard let result else {
            throw PostgresError(sqlState: PostgresError.connectionFailure,
                                message: handle.map { Self.message(PQerrorMessage($0)) } ?? "connection closed", context: context)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let state = herald_pq_sqlstate(result).map { String(cString: $0) }
            let message = herald_pq_primary_message(result).map { String(cString: $0) } ?? Self.message(PQresultErrorMessage(result))
            // libpq reports a broken connection without a SQLSTATE.
            let broken = handle.map { PQstatus($0) != CONNECTION_OK } ?? true
            throw PostgresError(sqlState: state ?? (broken ? PostgresError.connectionFailure : "XX000"), message: message, context: context)
        }
    }

    private func closed(_ sql: String) -> PostgresError {
        PostgresError(sqlState: PostgresError.connectionFailure, message: "connection closed", context: "running \(sql.prefix(60))")
    }

    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        var message = String(cString: text)
        while message.last?.isWhitespace == true { message.removeLast() }
        return message
    }
}

/// The rows of one statement, freed when released.
public final class PostgresResult {
    fileprivate let raw: OpaquePointer

    init(_ raw: OpaquePointer) { self.raw = raw }

    deinit { PQclear(raw) }

    public var count: Int { Int(PQntuples(raw)) }

    /// Rows changed by an INSERT, UPDATE or DELETE (0 for other statements).
    public var affectedRows: Int {
        guard let text = PQcmdTuples(raw) else { return 0 }
        return Int(strtol(text, nil, 10))
    }

    public subscript(row: Int) -> PostgresRow { PostgresRow(result: self, row: Int32(row)) }
}

/// One row of a `PostgresResult`, read by column index. Values arrive in PostgreSQL's text format.
public struct PostgresRow {
    let result: PostgresResult
    let row: Int32

    private func value(_ column: Int32) -> UnsafeMutablePointer<CChar> { PQgetvalue(result.raw, row, column) }

    public func isNull(_ column: Int32) -> Bool { PQgetisnull(result.raw, row, column) != 0 }
    public func int(_ column: Int32) -> Int64 { strtoll(value(column), nil, 10) }
    public func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }
    public func double(_ column: Int32) -> Double { strtod(value(column), nil) }
    public func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }
    public func bool(_ column: Int32) -> Bool { value(column).pointee == CChar(UInt8(ascii: "t")) }
    public func text(_ column: Int32) -> String { String(cString: value(column)) }
    public func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    /// A `bytea` column, which the text format spells `\x` and two hex digits per byte.
    public func bytes(_ column: Int32) -> [UInt8] {
        let length = Int(PQgetlength(result.raw, row, column))
        guard length >= 2 else { return [] }
        return value(column).withMemoryRebound(to: UInt8.self, capacity: length) { text in
            func nibble(_ digit: UInt8) -> UInt8 { digit >= UInt8(ascii: "a") ? digit - UInt8(ascii: "a") + 10 : digit - UInt8(ascii: "0") }
            var bytes: [UInt8] = []
            bytes.reserveCapacity((length - 2) / 2)
            var index = 2
            while index + 1 < length {
                bytes.append(nibble(text[index]) << 4 | nibble(text[index + 1]))
                index += 2
            }
            return bytes
        }
    }
}

/// `transaction` runs `BEGIN … COMMIT` on the connection, rolling back while it is healthy.
extension PostgresConnection: TransactionStatements {
    public var canRollBack: Bool { isHealthy }
}

/// The shared statements run as they are written.
extension PostgresConnection: StatementRunner {
    public func select<T>(_ sql: String, _ values: [PostgresValue], _ transform: (PostgresRow) throws -> T) throws -> [T] {
        try rows(sql, values, transform)
    }

    public func selectFirst<T>(_ sql: String, _ values: [PostgresValue], _ transform: (PostgresRow) throws -> T) throws -> T? {
        try first(sql, values, transform)
    }

    @discardableResult
    public func execute(_ sql: String, _ values: [PostgresValue]) throws -> Int {
        try run(sql, values)
    }

    public var byteOrder: String { #" COLLATE "C""# }
    public var greatest: String { "greatest" }
    public func lockForUpdate(of table: String) -> String { " FOR UPDATE OF \(table)" }
    public var lockForShare: String { " FOR SHARE" }
    public func indexedBy(_ index: String) -> String { "" }
    public func tokenPrefix(_ expression: String) -> String { "left(\(expression), 16)" }
    public func entries(of placeholder: String) -> String { "unnest(\(placeholder)::text[]) WITH ORDINALITY AS e(entry, position)" }
}

/// A result row as the shared store rules read it.
extension PostgresRow: StoredRow {}
