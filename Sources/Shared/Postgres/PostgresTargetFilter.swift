import Core

/// The parameters of a statement being built: each value added gets the next `$n`.
struct PostgresParameters {
    private(set) var values: [PostgresValue] = []

    init(_ values: [PostgresValue] = []) { self.values = values }

    /// Adds `value` and returns its placeholder.
    mutating func add(_ value: PostgresValue) -> String {
        values.append(value)
        return "$\(values.count)"
    }
}

/// Turns parsed tag conditions into one SQL boolean expression over a device row aliased `d`
/// (`d.id`, `d.language`), with the semantics of the SQLite backend's `TargetFilter`, which
/// documents them. The caller reads a window of device ids, `(after, through]`, and each tag
/// condition reads the tag rows of that window once: `(d.id IN (SELECT t.device_id FROM device_tags
/// t WHERE t.device_id > after AND t.device_id <= through AND …)) IS TRUE`, a hashed subplan built
/// from one range of the tag table's key (`IS TRUE` keeps the planner from turning it into a join).
/// Its cost is bounded by the window, whatever the planner estimates: as a join, the planner's
/// estimate of the combined conditions made it hash or merge the tag rows of a whole shard for each
/// page (27 to 150 ms a page of 250 instead of 2 to 6 ms, measured on a million devices); looked up
/// per device, each lookup is a descent of the key (about 2 µs), where reading the window's rows in
/// key order costs a fraction of that per device. Values are always bound as parameters.
public enum PostgresTargetFilter {
    /// The placeholders of the bounds of the device ids the caller reads: after `after`, up to and
    /// including `through`.
    struct Window {
        let after: String
        let through: String

        /// `column` lies in the window.
        func holds(_ column: String) -> String { "\(column) > \(after) AND \(column) <= \(through)" }
    }

    /// The expression for `conditions` joined with AND or OR (each one parenthesised), its values
    /// added to `parameters`; `true` when there are no conditions. `app` is the placeholder of the
    /// application's id; the tag conditions read the tag rows of `window`.
    static func sql(for conditions: [TagCondition], combinedWith op: ConditionsOperator, app: String, window: Window,
                    _ parameters: inout PostgresParameters) -> String {
        guard !conditions.isEmpty else { return "true" }
        return conditions.map { "(" + expression(for: $0, app: app, window: window, &parameters) + ")" }
            .joined(separator: op == .and ? " AND " : " OR ")
    }

    /// The expression for a `devices_filter` of a message of application `appCode` (see the SQLite
    /// backend's `TargetFilter`); `app` is the placeholder of its id, `window` as above.
    static func sql(for filter: DeviceFilter, appCode: String, app: String, window: Window,
                    _ parameters: inout PostgresParameters) -> String {
        func sql(_ node: DeviceFilter) -> String {
            switch node {
            case .app(let code, let platforms):
                guard code == appCode else { return "false" }
                guard let platforms else { return "true" }
                return platforms.isEmpty ? "false" : "d.platform IN (\(platforms.map(String.init).joined(separator: ", ")))"
            case .tag(let code, let condition):
                if let code, code != appCode { return "false" }
                return "(" + expression(for: condition, app: app, window: window, &parameters) + ")"
            case .union(let left, let right): return "(" + sql(left) + " OR " + sql(right) + ")"
            case .intersection(let left, let right): return "(" + sql(left) + " AND " + sql(right) + ")"
            case .difference(let left, let right): return "(" + sql(left) + " AND NOT " + sql(right) + ")"
            }
        }
        return sql(filter)
    }

    static func expression(for condition: TagCondition, app: String, window: Window, _ parameters: inout PostgresParameters) -> String {
        guard condition.op == .notSet || condition.op == .any || TagCondition.supports(condition.type, condition.op) else {
            return "false"
        }
        var values = condition.operands.map(value)
        if condition.tag == TagCondition.languageTag && condition.type == .string {
            switch condition.op {
            case .notSet: return "d.language IS NULL"
            case .any: return "d.language IS NOT NULL"
            default:
                // The base code of the device's language (see `TagCondition.baseLanguage`).
                let base = "lower(split_part(replace(d.language, '_', '-'), '-', 1))"
                return "d.language IS NOT NULL AND " + compare(base, condition.op, values, &parameters)
            }
        }
        let name = parameters.add(.text(condition.tag))
        let tag = """
            SELECT t.device_id FROM device_tags t WHERE \(window.holds("t.device_id")) AND t.app_id = \(app) AND t.name = \(name)
            """
        // Whether the device is among the window's devices the subquery selects (see the type's
        // documentation).
        func among(_ subquery: String) -> String { "(d.id IN (\(subquery))) IS TRUE" }
        func notAmong(_ subquery: String) -> String { "(d.id IN (\(subquery))) IS NOT TRUE" }
        switch (condition.type, condition.op) {
        case (_, .notSet):
            return notAmong(tag)
        case (_, .any):
            return among(tag)
        case (.list, .notIn):
            return among(tag) + " AND " + notAmong(items(name, app: app, window: window, values, &parameters))
        case (.list, _):
            return among(items(name, app: app, window: window, values, &parameters))
        case (.string, let op):
            return among("\(tag) AND \(compare("t.str", op, values, &parameters))")
        case (.date, .eq), (.date, .notEq), (.date, .inList), (.date, .notIn):
            values = condition.operands.map { operand in
                guard case .number(let seconds) = operand else { return value(operand) }
                return number(TagCondition.startOfDay(seconds))
            }
            let day = "(t.num - mod(mod(t.num, 86400) + 86400, 86400))"
            return among("\(tag) AND \(compare(day, condition.op, values, &parameters))")
        case (_, let op):
            return among("\(tag) AND \(compare("t.num", op, values, &parameters))")
        }
    }

    /// The items subquery of a list tag, whose name is already the parameter `name`.
    private static func items(_ name: String, app: String, window: Window, _ values: [PostgresValue],
                              _ parameters: inout PostgresParameters) -> String {
        """
        SELECT i.device_id FROM device_tag_items i WHERE \(window.holds("i.device_id")) AND i.app_id = \(app) AND i.name = \(name)
          AND \(compare("i.item", .inList, values, &parameters))
        """
    }

    /// `column <op> operand(s)` for a value operator.
    private static func compare(_ column: String, _ op: TagCondition.Operator, _ values: [PostgresValue],
                                _ parameters: inout PostgresParameters) -> String {
        let symbol: String
        switch op {
        case .eq: symbol = "="
        case .notEq: symbol = "<>"
        case .gte: symbol = ">="
        case .lte: symbol = "<="
        case .inList, .notIn:
            guard !values.isEmpty else { return "false" }
            let list = values.map { parameters.add($0) }.joined(separator: ", ")
            return "\(column) \(op == .notIn ? "NOT IN" : "IN") (\(list))"
        case .between:
            guard values.count == 2 else { return "false" }
            return "\(column) BETWEEN \(parameters.add(values[0])) AND \(parameters.add(values[1]))"
        case .notSet, .any:
            return "false"
        }
        guard let first = values.first else { return "false" }
        return "\(column) \(symbol) \(parameters.add(first))"
    }

    private static func value(_ operand: TagCondition.Operand) -> PostgresValue {
        switch operand {
        case .number(let number): return self.number(number)
        case .text(let text): return .text(text)
        }
    }

    /// Integral numbers bind as integers, others as doubles; both compare exactly with `numeric`.
    private static func number(_ number: Double) -> PostgresValue {
        Int64(exactly: number).map(PostgresValue.integer) ?? .double(number)
    }
}
