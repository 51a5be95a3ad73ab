import Core

/// The analytics reads and retention rules that both backends run alike.
package enum AnalyticsQueries {
    /// Per minute of `[from, to)`, the application's installs, registrations, opens and
    /// unregistrations (a device whose token is gone or that unsubscribed, by its last update).
    package static func applicationActivity<Connection: StatementRunner>(_ connection: Connection, appID: Int64, from: Int64,
                                                                         to: Int64) throws -> [ActivityCount] {
        try connection.select(
            """
            SELECT created_at / 60 * 60 AS minute, 'install' AS action, count(*) FROM devices
            WHERE app_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY minute
            UNION ALL
            SELECT created_at / 60 * 60 AS minute, 'register', count(*) FROM devices
            WHERE app_id = $1 AND created_at >= $2 AND created_at < $3 AND push_token IS NOT NULL GROUP BY minute
            UNION ALL
            SELECT last_open_at / 60 * 60 AS minute, 'open', count(*) FROM devices
            WHERE app_id = $1 AND last_open_at >= $2 AND last_open_at < $3 GROUP BY minute
            UNION ALL
            SELECT updated_at / 60 * 60 AS minute, 'unregister', count(*) FROM devices
            WHERE app_id = $1 AND updated_at >= $2 AND updated_at < $3 AND (push_token IS NULL OR NOT subscribed) GROUP BY minute
            ORDER BY 1, 2
            """, [.integer(appID), .integer(from), .integer(to)]) { ActivityCount(minute: $0.int(0), action: $0.text(1), count: Int($0.int(2))) }
    }

    /// The application's opt-ins and opt-outs in `[from, to)`, in `OptInCount.precedes` order.
    package static func optIns<Connection: StatementRunner>(_ connection: Connection, appID: Int64, from: Int64,
                                                            to: Int64) throws -> [OptInCount] {
        try connection.select(OptInCount.query, [.integer(appID), .integer(from), .integer(to)]) { OptInCount(row: $0) }
            .sorted { $0.precedes($1) }
    }

    /// The lowest report id received at or after `before`, or past the last report when none was
    /// (nil: no reports). Ids follow arrival, so the reports received before `before` are the ids
    /// below it, found by bisection: a few primary-key lookups instead of a scan.
    package static func firstReport<Connection: StatementRunner>(receivedFrom before: Int64,
                                                                 _ connection: Connection) throws -> Int64? {
        guard let bounds = try connection.selectFirst("SELECT min(id), max(id) FROM reports", [], { row in
            row.optionalInt(0).flatMap { low in row.optionalInt(1).map { (low, $0) } }
        }), var (low, high) = bounds else { return nil }
        high += 1
        while low < high {
            let middle = low + (high - low) / 2
            if let received = try connection.selectFirst("SELECT received_at FROM reports WHERE id >= $1 ORDER BY id LIMIT 1",
                                                         [.integer(middle)], { $0.int(0) }), received < before {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }
}
