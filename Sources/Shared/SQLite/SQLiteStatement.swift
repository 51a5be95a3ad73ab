internal import CSQLite
import Core
import StoreCore

/// A value bound to, or read from, a statement parameter.
public enum SQLiteValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A prepared statement owned by its `SQLiteConnection` (same thread rules).
public final class SQLiteStatement {
    private var raw: OpaquePointer?
    private unowned let connection: SQLiteConnection
    let sql: String
    /// How many parameters the statement has.
    private let parameterCount: Int
    /// The bytes of the texts bound last by `bind`, which SQLite reads in place.
    private var boundTexts: [UInt8] = []
    /// The texts bound last by `run(binding:)`, which SQLite reads in place.
    private let texts = BoundTexts()

    init(_ raw: OpaquePointer, connection: SQLiteConnection, sql: String) {
        self.raw = raw
        self.connection = connection
        self.sql = sql
        parameterCount = Int(sqlite3_bind_parameter_count(raw))
    }

    func finalize() {
        sqlite3_finalize(raw)
        raw = nil
    }

    func reset() {
        sqlite3_reset(raw)
    }

    /// Binds `values` to parameters 1…n; any parameter after them is null (every run binds, so
    /// nothing of an earlier run's values is left). Texts are copied into one buffer that SQLite
    /// reads in place (one allocation per call instead of one of SQLite's per text), kept until
    /// the next call has bound or cleared every parameter.
    @discardableResult
    public func bind(_ values: [SQLiteValue]) throws(SQLiteError) -> SQLiteStatement {
        if values.count < parameterCount { sqlite3_clear_bindings(raw) }
        var length = 0
        for case .text(let text) in values { length += text.utf8.count }
        var texts: [UInt8] = []
        texts.reserveCapacity(length)
        for case .text(let text) in values { texts.append(contentsOf: text.utf8) }
        // A failed call clears what it bound: nothing may point into `texts` once it is gone.
        var bound = false
        defer { if !bound { sqlite3_clear_bindings(raw) } }
        try texts.withUnsafeBufferPointer { (bytes: UnsafeBufferPointer<UInt8>) throws(SQLiteError) in
            var offset = 0
            for (position, value) in values.enumerated() {
                let index = Int32(position + 1)
                let result = bindValue(value, to: raw, at: index) { text in
                    let count = text.utf8.count
                    defer { offset += count }
                    return herald_sqlite3_bind_text_static(raw, index, bytes.baseAddress.map { $0 + offset }, Int32(count))
                }
                guard result == SQLITE_OK else { throw connection.error(result, "binding parameter \(index) of \(sql.prefix(60))") }
            }
        }
        // Every parameter now points into `texts` or holds its own copy: the last call's buffer can go.
        boundTexts = texts
        bound = true
        return self
    }

    /// Advances to the next row; false when done.
    public func step() throws(SQLiteError) -> Bool {
        let result = sqlite3_step(raw)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.error(result, "running \(sql.prefix(60))")
            sqlite3_reset(raw)
            throw error
        }
    }

    /// Runs a statement that returns no rows.
    public func run(_ values: [SQLiteValue] = []) throws(SQLiteError) {
        try bind(values)
        while try step() {}
        sqlite3_reset(raw)
    }

    /// Binds the values `body` appends to parameters 1…n (any parameter after them is null), as
    /// `bind` does but with no array of them: each is bound as it is appended, its text copied once
    /// into memory the statement keeps until it binds again. Then runs the statement, which returns
    /// no rows.
    public func run(binding body: (inout SQLiteBinder) throws -> Void) throws {
        texts.reset()
        var parameters = SQLiteBinder(raw: raw, texts: texts)
        // A failed call clears what it bound: nothing may point into `texts` once they are reused.
        var bound = false
        defer { if !bound { sqlite3_clear_bindings(raw) } }
        try body(&parameters)
        if let failure = parameters.failure {
            throw connection.error(failure.code, "binding parameter \(failure.index) of \(sql.prefix(60))")
        }
        var index = parameters.count + 1
        while index <= parameterCount {
            let result = sqlite3_bind_null(raw, index)
            guard result == SQLITE_OK else { throw connection.error(result, "binding parameter \(index) of \(sql.prefix(60))") }
            index += 1
        }
        if !boundTexts.isEmpty { boundTexts = [] }
        bound = true
        while try step() {}
        sqlite3_reset(raw)
    }

    /// Runs a query and maps each row.
    public func rows<T>(_ values: [SQLiteValue] = [], _ transform: (SQLiteStatement) throws -> T) throws -> [T] {
        try rows(values, into: []) { result, row in result.append(try transform(row)) }
    }

    /// Runs a query and adds each row to `result`, which starts as `initial`.
    public func rows<T>(_ values: [SQLiteValue] = [], into initial: T, _ add: (inout T, SQLiteStatement) throws -> Void) throws -> T {
        try bind(values)
        defer { sqlite3_reset(raw) }
        var result = initial
        while try step() { try add(&result, self) }
        return result
    }

    /// The first row mapped, or nil.
    public func first<T>(_ values: [SQLiteValue] = [], _ transform: (SQLiteStatement) throws -> T) throws -> T? {
        try bind(values)
        defer { sqlite3_reset(raw) }
        return try step() ? try transform(self) : nil
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }
    public func int(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    public func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }
    /// An integer column read as a flag: anything but 0 is true.
    public func bool(_ column: Int32) -> Bool { int(column) != 0 }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(raw, column) }
    public func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }
    public func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(raw, column) else { return "" }
        return String(cString: pointer)
    }
    public func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    public func bytes(_ column: Int32) -> [UInt8] { blob(column) }
    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let pointer = sqlite3_column_blob(raw, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func value(_ column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(raw, column) {
        case SQLITE_INTEGER: return .integer(int(column))
        case SQLITE_FLOAT: return .real(double(column))
        case SQLITE_NULL: return .null
        case SQLITE_BLOB: return .blob(blob(column))
        default: return .text(text(column))
        }
    }
}

/// Binds `value` to parameter `index` of `raw`, a text through `bindText`, which decides where
/// SQLite reads it; SQLite's result code.
@inline(__always)
private func bindValue(_ value: SQLiteValue, to raw: OpaquePointer?, at index: Int32, text bindText: (String) -> Int32) -> Int32 {
    switch value {
    case .null: sqlite3_bind_null(raw, index)
    case .integer(let number): sqlite3_bind_int64(raw, index, number)
    case .real(let number): sqlite3_bind_double(raw, index, number)
    case .text(let text): bindText(text)
    case .blob(let blob): blob.withUnsafeBytes { herald_sqlite3_bind_blob_transient(raw, index, $0.baseAddress, Int32($0.count)) }
    }
}

/// A statement's parameters, bound one after another as they are appended
/// (`SQLiteStatement.run(binding:)`).
public struct SQLiteBinder: ParameterSink {
    private let raw: OpaquePointer?
    private let texts: BoundTexts
    /// How many parameters are bound.
    private(set) var count: Int32 = 0
    /// The first bind that failed: its result code and parameter.
    private(set) var failure: (code: Int32, index: Int32)?

    fileprivate init(raw: OpaquePointer?, texts: BoundTexts) {
        self.raw = raw
        self.texts = texts
    }

    public mutating func append(_ value: SQLiteValue) {
        count += 1
        let (raw, index, texts) = (raw, count, texts)
        let result = bindValue(value, to: raw, at: index) { texts.bind($0, to: raw, at: index) }
        if result != SQLITE_OK, failure == nil { failure = (result, index) }
    }
}

/// The texts a statement binds in place: each copied once into chunks that never move while the
/// statement's parameters point into them, reused from the start when it binds again.
private final class BoundTexts {
    /// Chunks hold this much, or one text that is longer; only the first such chunk is kept
    /// between binds.
    private static let chunkSize = 64 * 1024
    private var chunks: [UnsafeMutableRawBufferPointer] = []
    /// The chunk being filled and how much of it is used.
    private var chunk = 0
    private var used = 0

    deinit {
        for chunk in chunks { chunk.deallocate() }
    }

    /// Makes every chunk free for the next texts; frees those beyond a first of the usual size.
    func reset() {
        if chunks.count > 1 || chunks.first.map({ $0.count > Self.chunkSize }) == true {
            let keep = chunks.first.flatMap { $0.count == Self.chunkSize ? $0 : nil }
            for chunk in chunks where chunk.baseAddress != keep?.baseAddress { chunk.deallocate() }
            chunks = keep.map { [$0] } ?? []
        }
        chunk = 0
        used = 0
    }

    /// Copies `text` into a chunk and binds the copy to parameter `index` of `raw`.
    func bind(_ text: String, to raw: OpaquePointer?, at index: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return herald_sqlite3_bind_text_static(raw, index, nil, 0) }
            let target = room(for: bytes.count)
            target.copyMemory(from: source, byteCount: bytes.count)
            return herald_sqlite3_bind_text_static(raw, index, target.assumingMemoryBound(to: UInt8.self), Int32(bytes.count))
        }
    }

    /// `count` bytes of a chunk that no bound text uses.
    private func room(for count: Int) -> UnsafeMutableRawPointer {
        while chunk < chunks.count {
            if let base = chunks[chunk].baseAddress, chunks[chunk].count - used >= count {
                used += count
                return base + (used - count)
            }
            chunk += 1
            used = 0
        }
        let fresh = UnsafeMutableRawBufferPointer.allocate(byteCount: max(Self.chunkSize, count), alignment: 1)
        chunks.append(fresh)
        chunk = chunks.count - 1
        used = count
        return fresh.baseAddress!
    }
}

/// A statement on a row reads as a `StoredRow`.
extension SQLiteStatement: StoredRow {}
