/// What a column stores. Each backend names the type in its dialect (`SchemaDialect`).
package enum ColumnType: Sendable {
    /// The table's row id: its primary key, assigned on insert.
    case rowID
    /// An integer within 32 bits: a platform, a type, an attempt count, a position.
    case int32
    /// Any other integer: ids, unix times, counters.
    case int64
    /// True or false; `default` is the value of a row inserted without one.
    case bool(default: Bool? = nil)
    case text
    case bytes
    case double
    /// A tag's number: integers, decimals, booleans, dates and versions (encoded to 17 digits).
    case tagNumber
}

/// A column as every backend declares it.
package struct ColumnShape: Sendable {
    let name: String
    let type: ColumnType
    /// What follows the type, written alike in every dialect: `NOT NULL`, `UNIQUE`, a number's `DEFAULT`.
    let rule: String
    /// The key the column refers to, e.g. `applications(id)`.
    let references: String?

    package init(_ name: String, _ type: ColumnType, _ rule: String = "", references: String? = nil) {
        (self.name, self.type, self.rule, self.references) = (name, type, rule, references)
    }
}

/// A table as every backend creates it: its columns in order, and its key.
package struct TableShape: Sendable {
    let name: String
    let columns: [ColumnShape]
    /// The columns of the key, for a table keyed by its values rather than a row id; such a table
    /// is read by its key's prefixes, and a backend that can store rows in key order does.
    let primaryKey: String?
    /// Columns whose values together are unique.
    let unique: String?
    /// Written on every registration or report: its references are declared only by a backend
    /// whose checks cost no more than a lookup (`SchemaDialect.declaresBusyReferences`).
    let busy: Bool

    package init(_ name: String, _ columns: [ColumnShape], primaryKey: String? = nil, unique: String? = nil, busy: Bool = false) {
        (self.name, self.columns, self.primaryKey, self.unique, self.busy) = (name, columns, primaryKey, unique, busy)
    }

    /// The same table with `more` columns after its own.
    package func adding(_ more: [ColumnShape]) -> TableShape {
        TableShape(name, columns + more, primaryKey: primaryKey, unique: unique, busy: busy)
    }
}

/// How a backend writes the schema: its type names and literals. Its migrations create the
/// tables of `Tables` with `create(_:)` and add their later columns with `add(_:to:)`.
package protocol SchemaDialect {
    /// The declared type of a `type` column, with what that type implies (a row id's key).
    static func typeName(_ type: ColumnType) -> String
    static func literal(_ value: Bool) -> String
    /// What follows the definition of a table keyed by its `primaryKey`.
    static var keyedTableOptions: String { get }
    /// Whether the busy tables declare their references: a check that costs more than a lookup
    /// of the row it names (PostgreSQL's is a trigger per row) is left out of them.
    static var declaresBusyReferences: Bool { get }
}

extension SchemaDialect {
    /// `CREATE TABLE` for `table`, one column a line.
    package static func create(_ table: TableShape) -> String {
        var lines = table.columns.map { "    " + definition($0, in: table) }
        if let unique = table.unique { lines.append("    UNIQUE (\(unique))") }
        if let key = table.primaryKey { lines.append("    PRIMARY KEY (\(key))") }
        let options = table.primaryKey == nil ? "" : keyedTableOptions
        return "CREATE TABLE \(table.name) (\n" + lines.joined(separator: ",\n") + "\n)\(options);"
    }

    /// `ALTER TABLE … ADD COLUMN` for each of `columns`, one statement a line.
    package static func add(_ columns: [ColumnShape], to table: TableShape) -> String {
        columns.map { "ALTER TABLE \(table.name) ADD COLUMN \(definition($0, in: table));" }.joined(separator: "\n")
    }

    private static func definition(_ column: ColumnShape, in table: TableShape) -> String {
        var parts = [column.name, typeName(column.type), column.rule]
        if case .bool(let value?) = column.type { parts.append("DEFAULT \(literal(value))") }
        if let target = column.references, declaresBusyReferences || !table.busy { parts.append("REFERENCES \(target)") }
        return parts.filter { !$0.isEmpty }.joined(separator: " ")
    }
}
