import Core
import StoreCore

/// Tag conditions and device filters in SQLite's SQL (`TagConditionSQL` states their rules). Each
/// tag condition is an `EXISTS` / `NOT EXISTS` subquery keyed on `(device_id, name)`, so SQLite
/// answers it with primary-key point lookups while the caller walks a range of `d.id`. Values bind
/// through `?` placeholders, in the order of the returned bindings.
public enum TargetFilter {
    /// The expression for `conditions` joined with AND or OR (each one parenthesised), and its
    /// bindings in placeholder order; `"1"` when there are no conditions.
    public static func sql(for conditions: [TagCondition], combinedWith op: ConditionsOperator)
        -> (sql: String, bindings: [SQLiteValue])
    {
        var parameters = SQLiteParameters()
        let sql = TagConditionSQL(Dialect()).sql(for: conditions, combinedWith: op, &parameters)
        return (sql, parameters.values)
    }

    /// The expression for a `devices_filter` of a message of application `app`.
    public static func sql(for filter: DeviceFilter, app: String) -> (sql: String, bindings: [SQLiteValue]) {
        var parameters = SQLiteParameters()
        let sql = TagConditionSQL(Dialect()).sql(for: filter, app: app, &parameters)
        return (sql, parameters.values)
    }

    struct Dialect: TagConditionDialect {
        typealias Parameters = SQLiteParameters

        let always = "1"
        let never = "0"
        let languageBase = "lower(CASE WHEN instr(replace(d.language, '_', '-'), '-') > 0 "
            + "THEN substr(d.language, 1, instr(replace(d.language, '_', '-'), '-') - 1) ELSE d.language END)"
        let dayOfNumber = "(t.num - (t.num % 86400 + 86400) % 86400)"

        func tagRows(name: String, where condition: String?) -> String {
            "SELECT 1 FROM device_tags t WHERE t.device_id = d.id AND t.name = \(name)" + (condition.map { " AND " + $0 } ?? "")
        }

        func itemRows(name: String, where condition: String) -> String {
            "SELECT 1 FROM device_tag_items i WHERE i.device_id = d.id AND i.name = \(name) AND " + condition
        }

        func among(_ subquery: String) -> String { "EXISTS (\(subquery))" }
        func notAmong(_ subquery: String) -> String { "NOT EXISTS (\(subquery))" }
    }
}

/// The bindings of a statement being built with positional `?` placeholders.
struct SQLiteParameters: StatementParameters {
    private(set) var values: [SQLiteValue] = []

    mutating func add(_ value: SQLiteValue) -> String {
        values.append(value)
        return "?"
    }

    mutating func again(_ value: SQLiteValue, as placeholder: String) -> String { add(value) }
}

extension SQLiteValue: BoundValue {
    public static func bytes(_ value: [UInt8]) -> SQLiteValue { .blob(value) }
    /// A JSON array, which `json_each` reads.
    public static func textList(_ values: [String]) -> SQLiteValue { .text(JSON.array(values.map(JSON.string)).text) }
}
