import Core

/// What a backend's SQL for tag conditions is made of: its boolean literals, two expressions and
/// the subqueries that find a device's tag rows. `TagConditionSQL` holds the rules of targeting and
/// asks its dialect only for these.
package protocol TagConditionDialect: Sendable {
    associatedtype Parameters: StatementParameters

    /// The expressions that match every device and no device.
    var always: String { get }
    var never: String { get }
    /// The base code of the device's language `d.language` (see `TagCondition.baseLanguage`).
    var languageBase: String { get }
    /// The start of the UTC day of the tag's number `t.num`.
    var dayOfNumber: String { get }

    /// The subquery of the device's rows of the tag named by the placeholder `name` in
    /// `device_tags t` (columns `t.num`, `t.str`); `condition`, when given, narrows them.
    func tagRows(name: String, where condition: String?) -> String
    /// The subquery of the device's items of the list tag named by `name` in `device_tag_items i`
    /// (column `i.item`) that meet `condition`.
    func itemRows(name: String, where condition: String) -> String
    /// The device is among the rows `subquery` finds, or is not.
    func among(_ subquery: String) -> String
    func notAmong(_ subquery: String) -> String
}

/// Turns parsed tag conditions and device filters into one SQL boolean expression over a device
/// row aliased `d` (`d.id`, `d.platform`, `d.language`), in the SQL of `dialect`. Values are always
/// bound as parameters.
///
/// EQ, IN, GTE, LTE, BETWEEN and ANY need the tag to be set; NOTEQ and NOTIN match devices whose
/// tag is set and differs; NOTSET matches devices without the tag. A list matches IN (and EQ) when
/// any item is in the operand, NOTIN when it is set and no item is. Date EQ, NOTEQ, IN and NOTIN
/// compare UTC days: a day D matches values in [D, D + 86400). A malformed condition (missing
/// operands, or an operator its type does not support) matches no device. A `devices_filter`
/// combines its sets with OR (union), AND (intersection) and AND NOT (difference); a set of another
/// application matches nothing.
package struct TagConditionSQL<Dialect: TagConditionDialect> {
    package typealias Value = Dialect.Parameters.Value

    let dialect: Dialect

    package init(_ dialect: Dialect) {
        self.dialect = dialect
    }

    /// The expression for `conditions` joined with AND or OR (each one parenthesised); `always`
    /// when there are none.
    package func sql(for conditions: [TagCondition], combinedWith op: ConditionsOperator,
                     _ parameters: inout Dialect.Parameters) -> String {
        guard !conditions.isEmpty else { return dialect.always }
        return conditions.map { "(" + expression(for: $0, &parameters) + ")" }
            .joined(separator: op == .and ? " AND " : " OR ")
    }

    /// The expression for a `devices_filter` of a message of the application `app` (its code).
    package func sql(for filter: DeviceFilter, app: String, _ parameters: inout Dialect.Parameters) -> String {
        switch filter {
        case .app(let code, let platforms):
            guard code == app else { return dialect.never }
            guard let platforms else { return dialect.always }
            return platforms.isEmpty ? dialect.never : "d.platform IN (\(platforms.map(String.init).joined(separator: ", ")))"
        case .tag(let code, let condition):
            if let code, code != app { return dialect.never }
            return "(" + expression(for: condition, &parameters) + ")"
        case .union(let left, let right):
            return "(" + sql(for: left, app: app, &parameters) + " OR " + sql(for: right, app: app, &parameters) + ")"
        case .intersection(let left, let right):
            return "(" + sql(for: left, app: app, &parameters) + " AND " + sql(for: right, app: app, &parameters) + ")"
        case .difference(let left, let right):
            return "(" + sql(for: left, app: app, &parameters) + " AND NOT " + sql(for: right, app: app, &parameters) + ")"
        }
    }

    /// The expression for one condition.
    package func expression(for condition: TagCondition, _ parameters: inout Dialect.Parameters) -> String {
        guard condition.op == .notSet || condition.op == .any || TagCondition.supports(condition.type, condition.op) else {
            return dialect.never
        }
        var values = condition.operands.map(Self.value)
        if condition.tag == TagCondition.languageTag && condition.type == .string {
            switch condition.op {
            case .notSet: return "d.language IS NULL"
            case .any: return "d.language IS NOT NULL"
            default: return "d.language IS NOT NULL AND " + compare(dialect.languageBase, condition.op, values, &parameters)
            }
        }
        let tag = Value.text(condition.tag)
        let name = parameters.add(tag)
        switch (condition.type, condition.op) {
        case (_, .notSet):
            return dialect.notAmong(dialect.tagRows(name: name, where: nil))
        case (_, .any):
            return dialect.among(dialect.tagRows(name: name, where: nil))
        case (.list, .notIn):
            let set = dialect.among(dialect.tagRows(name: name, where: nil))
            let items = parameters.again(tag, as: name)
            return set + " AND " + dialect.notAmong(dialect.itemRows(name: items, where: compare("i.item", .inList, values, &parameters)))
        case (.list, _):
            return dialect.among(dialect.itemRows(name: name, where: compare("i.item", .inList, values, &parameters)))
        case (.string, let op):
            return dialect.among(dialect.tagRows(name: name, where: compare("t.str", op, values, &parameters)))
        case (.date, .eq), (.date, .notEq), (.date, .inList), (.date, .notIn):
            values = condition.operands.map { operand in
                guard case .number(let seconds) = operand else { return Self.value(operand) }
                return Self.number(TagCondition.startOfDay(seconds))
            }
            return dialect.among(dialect.tagRows(name: name, where: compare(dialect.dayOfNumber, condition.op, values, &parameters)))
        case (_, let op):
            return dialect.among(dialect.tagRows(name: name, where: compare("t.num", op, values, &parameters)))
        }
    }

    /// `column <op> operand(s)` for a value operator.
    private func compare(_ column: String, _ op: TagCondition.Operator, _ values: [Value],
                         _ parameters: inout Dialect.Parameters) -> String {
        let symbol: String
        switch op {
        case .eq: symbol = "="
        case .notEq: symbol = "<>"
        case .gte: symbol = ">="
        case .lte: symbol = "<="
        case .inList, .notIn:
            guard !values.isEmpty else { return dialect.never }
            let list = values.map { parameters.add($0) }.joined(separator: ", ")
            return "\(column) \(op == .notIn ? "NOT IN" : "IN") (\(list))"
        case .between:
            guard values.count == 2 else { return dialect.never }
            let low = parameters.add(values[0])
            return "\(column) BETWEEN \(low) AND \(parameters.add(values[1]))"
        case .notSet, .any:
            return dialect.never
        }
        guard let first = values.first else { return dialect.never }
        return "\(column) \(symbol) \(parameters.add(first))"
    }

    private static func value(_ operand: TagCondition.Operand) -> Value {
        switch operand {
        case .number(let number): return self.number(number)
        case .text(let text): return .text(text)
        }
    }

    /// Integral numbers bind as integers (exact against stored integers), others as reals.
    private static func number(_ number: Double) -> Value {
        Int64(exactly: number).map(Value.integer) ?? .real(number)
    }
}
