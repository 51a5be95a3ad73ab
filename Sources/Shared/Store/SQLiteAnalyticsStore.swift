/// `AnalyticsStore` over the `reports` table. Attributes are read as the SDKs send them: numbers as
/// numbers (Android) or as strings (iOS), both cast to REAL.
public final class SQLiteAnalyticsStore: AnalyticsStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) {
        self.database = database
    }

    public func eventStatistics(app: String, from: Int64, to: Int64) throws(StoreError) -> EventStatistics {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.readTransaction {
                var stats = EventStatistics()
                let window: [SQLiteValue] = [.integer(appID), .integer(from), .integer(to)]
                // The report's own time when the SDK sent one, else when Herald received it.
                let inWindow = "app_id = ?1 AND occurred_at >= ?2 AND occurred_at < ?3"
                stats.events = try connection.prepare(
                    "SELECT name, count(*), count(DISTINCT hwid) FROM reports WHERE kind = 'event' AND \(inWindow) GROUP BY name ORDER BY count(*) DESC, name"
                ).rows(window) { EventStatistics.Event(name: $0.text(0), count: Int($0.int(1)), devices: Int($0.int(2))) }
                stats.screens = try connection.prepare(
                    """
                    SELECT json_extract(body, '$.attributes.screen_name') AS screen, count(*) FROM reports
                    WHERE kind = 'event' AND name = 'PW_ScreenOpen' AND \(inWindow) AND screen IS NOT NULL
                    GROUP BY screen ORDER BY count(*) DESC, screen
                    """
                ).rows(window) { EventStatistics.Screen(name: $0.text(0), count: Int($0.int(1))) }
                if let row = try connection.prepare(
                    """
                    SELECT count(*), avg(CAST(json_extract(body, '$.attributes.session_duration') AS REAL)),
                      avg(CASE WHEN name = 'PW_UserIdle' THEN CAST(json_extract(body, '$.attributes.idle_seconds') AS REAL) END)
                    FROM reports WHERE kind = 'event' AND name IN ('PW_UserIdle', 'PW_ApplicationExit') AND \(inWindow)
                      AND json_extract(body, '$.attributes.session_duration') IS NOT NULL
                    """
                ).first(window, { ($0.int(0), $0.optionalDouble(1), $0.optionalDouble(2)) }) {
                    (stats.sessions, stats.averageSessionSeconds, stats.averageIdleSeconds) = (Int(row.0), row.1, row.2)
                }
                for (currency, count, amount) in try connection.prepare(
                    """
                    SELECT coalesce(json_extract(body, '$.attributes.__currency'), json_extract(body, '$.attributes.currency'),
                             json_extract(body, '$.currency'), '') AS currency,
                      count(*),
                      sum(coalesce(CAST(json_extract(body, '$.attributes.__amount') AS REAL),
                                   CAST(json_extract(body, '$.attributes.amount') AS REAL),
                                   CAST(json_extract(body, '$.price') AS REAL) * coalesce(CAST(json_extract(body, '$.quantity') AS REAL), 1), 0))
                    FROM reports WHERE ((kind = 'event' AND name = 'PW_InAppPurchase') OR kind = 'purchase') AND \(inWindow)
                    GROUP BY currency
                    """
                ).rows(window, { ($0.text(0), Int($0.int(1)), $0.double(2)) }) {
                    stats.purchases += count
                    if !currency.isEmpty || amount != 0 { stats.revenue[currency.isEmpty ? "unknown" : currency, default: 0] += amount }
                }
                stats.days = try connection.prepare(
                    """
                    SELECT date(occurred_at, 'unixepoch') AS day, count(*), count(DISTINCT hwid) FROM reports
                    WHERE kind = 'event' AND \(inWindow) GROUP BY day ORDER BY day
                    """
                ).rows(window) { EventStatistics.Day(day: $0.text(0), events: Int($0.int(1)), devices: Int($0.int(2))) }
                return stats
            }
        }
    }
}
