import Core

/// Turns parsed tag conditions into one SQL boolean expression over a device row aliased `d`
/// (`d.id`, `d.language`). Each tag condition is an `EXISTS` / `NOT EXISTS` subquery keyed on
/// `(device_id, name)`, so SQLite answers it with primary-key point lookups while the caller walks
/// a range of `d.id`. Values are always bound through `?` placeholders.
///
/// EQ, IN, GTE, LTE, BETWEEN and ANY need the tag to be set; NOTEQ and NOTIN match devices whose
/// tag is set and differs; NOTSET matches devices without the tag. A list matches IN (and EQ) when
/// any item is in the operand, NOTIN when it is set and no item is. Date EQ, NOTEQ, IN and NOTIN
/// compare UTC days: a day D matches values in [D, D + 86400). A malformed condition (missing
/// operands, or an operator its type does not support) matches no device.
public enum TargetFilter {
    /// The expression for `conditions` joined with AND or OR (each one parenthesised), and its
    /// bindings in placeholder order; `"1"` when there are no conditions.
    public static func sql(for conditions: [TagCondition], combinedWith op: ConditionsOperator)
        -> (sql: String, bindings: [SQLiteValue])
    {
        guard !conditions.isEmpty else { return ("1", []) }
        var bindings: [SQLiteValue] = []
        var parts: [String] = []
        for condition in conditions {
            parts.append("(" + expression(for: condition, bindings: &bindings) + ")")
        }
        return (parts.joined(separator: op == .and ? " AND " : " OR "), bindings)
    }

    /// The expression for a `devices_filter` of a message of application `app`: union is OR,
    /// intersection AND, difference AND NOT, over the same per-device subqueries as conditions; a
    /// set of another application matches nothing.
    public static func sql(for filter: DeviceFilter, app: String) -> (sql: String, bindings: [SQLiteValue]) {
        var bindings: [SQLiteValue] = []
        let sql = expression(for: filter, app: app, bindings: &bindings)
        return (sql, bindings)
    }

    static func expression(for filter: DeviceFilter, app: String, bindings: inout [SQLiteValue]) -> String {
        switch filter {
        case .app(let code, let platforms):
            guard code == app else { return "0" }
            guard let platforms else { return "1" }
            return platforms.isEmpty ? "0" : "d.platform IN (\(platforms.map(String.init).joined(separator: ", ")))"
        case .tag(let code, let condition):
            if let code, code != app { return "0" }
            return "(" + expression(for: condition, bindings: &bindings) + ")"
        case .union(let left, let right):
            return "(" + expression(for: left, app: app, bindings: &bindings) + " OR " + expression(for: right, app: app, bindings: &bindings) + ")"
        case .intersection(let left, let right):
            return "(" + expression(for: left, app: app, bindings: &bindings) + " AND " + expression(for: right, app: app, bindings: &bindings) + ")"
        case .difference(let left, let right):
            return "(" + expression(for: left, app: app, bindings: &bindings) + " AND NOT "
                + expression(for: right, app: app, bindings: &bindings) + ")"
        }
    }

    static func expression(for condition: TagCondition, bindings: inout [SQLiteValue]) -> String {
        guard condition.op == .notSet || condition.op == .any || TagCondition.supports(condition.type, condition.op) else {
            return "0"
        }
        var values = condition.operands.map(value)
        if condition.tag == TagCondition.languageTag && condition.type == .string {
            switch condition.op {
            case .notSet: return "d.language IS NULL"
            case .any: return "d.language IS NOT NULL"
            default:
                // The base code of the device's language (see `TagCondition.baseLanguage`).
                let base = "lower(CASE WHEN instr(replace(d.language, '_', '-'), '-') > 0 "
                    + "THEN substr(d.language, 1, instr(replace(d.language, '_', '-'), '-') - 1) ELSE d.language END)"
                return "d.language IS NOT NULL AND " + compare(base, condition.op, values, &bindings)
            }
        }
        let tag = "SELECT 1 FROM device_tags t WHERE t.device_id = d.id AND t.name = ?"
        bindings.append(.text(condition.tag))
        switch (condition.type, condition.op) {
        case (_, .notSet):
            return "NOT EXISTS (\(tag))"
        case (_, .any):
            return "EXISTS (\(tag))"
        case (.list, .notIn):
            bindings.append(.text(condition.tag))
            return "EXISTS (\(tag)) AND NOT EXISTS (\(items(values, &bindings)))"
        case (.list, _):
            return "EXISTS (\(items(values, &bindings)))"
        case (.string, let op):
            return "EXISTS (\(tag) AND \(compare("t.str", op, values, &bindings)))"
        case (.date, .eq), (.date, .notEq), (.date, .inList), (.date, .notIn):
            values = condition.operands.map { operand in
                guard case .number(let seconds) = operand else { return value(operand) }
                return number(TagCondition.startOfDay(seconds))
            }
            let day = "(t.num - (t.num % 86400 + 86400) % 86400)"
            return "EXISTS (\(tag) AND \(compare(day, condition.op, values, &bindings)))"
        case (_, let op):
            return "EXISTS (\(tag) AND \(compare("t.num", op, values, &bindings)))"
        }
    }

    /// The items subquery of a list tag; its `name` placeholder is already bound by the caller.
    private static func items(_ values: [SQLiteValue], _ bindings: inout [SQLiteValue]) -> String {
        "SELECT 1 FROM device_tag_items i WHERE i.device_id = d.id AND i.name = ? AND "
            + compare("i.item", .inList, values, &bindings)
    }

    /// `column <op> operand(s)` for a value operator.
    private static func compare(_ column: String, _ op: TagCondition.Operator, _ values: [SQLiteValue],
                                _ bindings: inout [SQLiteValue]) -> String {
        let symbol: String
        switch op {
        case .eq: symbol = "="
        case .notEq: symbol = "<>"
        case .gte: symbol = ">="
        case .lte: symbol = "<="
        case .inList, .notIn:
            guard !values.isEmpty else { return "0" }
            bindings.append(contentsOf: values)
            let list = Array(repeating: "?", count: values.count).joined(separator: ", ")
            return "\(column) \(op == .notIn ? "NOT IN" : "IN") (\(list))"
        case .between:
            guard values.count == 2 else { return "0" }
            bindings.append(contentsOf: values)
            return "\(column) BETWEEN ? AND ?"
        case .notSet, .any:
            return "0"
        }
        guard let first = values.first else { return "0" }
        bindings.append(first)
        return "\(column) \(symbol) ?"
    }

    private static func value(_ operand: TagCondition.Operand) -> SQLiteValue {
        switch operand {
        case .number(let number): return self.number(number)
        case .text(let text): return .text(text)
        }
    }

    /// Integral numbers bind as INTEGER (exact against stored integers), others as REAL.
    private static func number(_ number: Double) -> SQLiteValue {
        Int64(exactly: number).map(SQLiteValue.integer) ?? .real(number)
    }
}
