import Core
import StoreCore

/// The parameters of a statement being built: each value added gets the next `$n`.
struct PostgresParameters: StatementParameters {
    private(set) var values: [PostgresValue] = []

    init(_ values: [PostgresValue] = []) { self.values = values }

    /// Adds `value` and returns its placeholder.
    mutating func add(_ value: PostgresValue) -> String {
        values.append(value)
        return "$\(values.count)"
    }

    /// A value already added is named again by its number.
    func again(_ value: PostgresValue, as placeholder: String) -> String { placeholder }
}

/// Tag conditions and device filters in PostgreSQL's SQL (`TagConditionSQL` states their rules).
/// The caller reads a window of device ids, `(after, through]`, and each tag condition reads the
/// tag rows of that window once: `(d.id IN (SELECT t.device_id FROM device_tags t WHERE
/// t.device_id > after AND t.device_id <= through AND …)) IS TRUE`, a hashed subplan built from one
/// range of the tag table's key (`IS TRUE` keeps the planner from turning it into a join). Its cost
/// is bounded by the window, whatever the planner estimates of the combined conditions; a lookup
/// per device would descend the key once per device, where reading the window's rows in key order
/// costs a fraction of that. Values are always bound as parameters.
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
        TagConditionSQL(Dialect(app: app, window: window)).sql(for: conditions, combinedWith: op, &parameters)
    }

    /// The expression for a `devices_filter` of a message of application `appCode`; `app` is the
    /// placeholder of its id, `window` as above.
    static func sql(for filter: DeviceFilter, appCode: String, app: String, window: Window,
                    _ parameters: inout PostgresParameters) -> String {
        TagConditionSQL(Dialect(app: app, window: window)).sql(for: filter, app: appCode, &parameters)
    }

    struct Dialect: TagConditionDialect {
        typealias Parameters = PostgresParameters

        /// The placeholder of the application's id.
        let app: String
        let window: Window
        let always = "true"
        let never = "false"
        let languageBase = "lower(split_part(replace(d.language, '_', '-'), '-', 1))"
        let dayOfNumber = "(t.num - mod(mod(t.num, 86400) + 86400, 86400))"

        func tagRows(name: String, where condition: String?) -> String {
            "SELECT t.device_id FROM device_tags t WHERE \(window.holds("t.device_id")) AND t.app_id = \(app) AND t.name = \(name)"
                + (condition.map { " AND " + $0 } ?? "")
        }

        func itemRows(name: String, where condition: String) -> String {
            """
            SELECT i.device_id FROM device_tag_items i WHERE \(window.holds("i.device_id")) AND i.app_id = \(app) AND i.name = \(name)
              AND \(condition)
            """
        }

        func among(_ subquery: String) -> String { "(d.id IN (\(subquery))) IS TRUE" }
        func notAmong(_ subquery: String) -> String { "(d.id IN (\(subquery))) IS NOT TRUE" }
    }
}
