/// `AnalyticsStore` over the `reports` table and the per-day rollups workers build from it.
///
/// Ingest appends each report to `reports` before it answers the SDK. Workers then fold batches of
/// reports into per-day tables (`event_days`, `screen_days`, …) and stamp them `processed_at`, in
/// one transaction per batch, so a batch processed twice counts once. Distinct devices are kept as
/// `DeviceSketch`es (exact up to 512 devices per day and event, then HyperLogLog). A window `[from, to)` is read
/// from the rollups for the whole UTC days inside it, plus the raw reports of the partial days at
/// its edges and the reports not processed yet: answers are exact the moment a report is
/// acknowledged, however far the workers lag. Attributes are read through the `report_facts` view.
public final class SQLiteAnalyticsStore: AnalyticsStore {
    let database: SQLiteDatabase

    static let day: Int64 = 86_400

    public init(database: SQLiteDatabase) {
        self.database = database
    }

    // MARK: Processing (workers)

    public func reportBacklog() throws(StoreError) -> ReportBacklog {
        try database.read { connection in
            try connection.prepare(
                "SELECT (SELECT min(id) FROM reports WHERE processed_at IS NULL), (SELECT max(id) FROM reports)"
            ).first { ReportBacklog(firstUnprocessed: $0.optionalInt(0), last: $0.optionalInt(1) ?? 0) } ?? ReportBacklog(firstUnprocessed: nil, last: 0)
        }
    }

    public func processReports(after first: Int64, through last: Int64, now: Int64) throws(StoreError) -> Int {
        try database.write { writer in
            let connection = writer.connection
            let range: [SQLiteValue] = [.integer(first), .integer(last)]
            let batch = "id > ?1 AND id <= ?2 AND processed_at IS NULL"
            try foldEvents(connection, batch: batch, range: range)
            for sql in [
                """
                INSERT INTO screen_days (app_id, day, screen, count)
                SELECT app_id, day, screen, count(*) FROM report_facts WHERE \(batch) AND screen IS NOT NULL GROUP BY app_id, day, screen
                ON CONFLICT DO UPDATE SET count = count + excluded.count
                """,
                """
                INSERT INTO session_days (app_id, day, sessions, duration_sum, idle_count, idle_sum)
                SELECT app_id, day, count(session_duration), total(session_duration), count(idle_seconds), total(idle_seconds)
                FROM report_facts WHERE \(batch) AND (session_duration IS NOT NULL OR idle_seconds IS NOT NULL) GROUP BY app_id, day
                ON CONFLICT DO UPDATE SET sessions = sessions + excluded.sessions, duration_sum = duration_sum + excluded.duration_sum,
                  idle_count = idle_count + excluded.idle_count, idle_sum = idle_sum + excluded.idle_sum
                """,
                """
                INSERT INTO purchase_days (app_id, day, currency, count, amount)
                SELECT app_id, day, currency, count(*), total(amount) FROM report_facts WHERE \(batch) AND is_purchase GROUP BY app_id, day, currency
                ON CONFLICT DO UPDATE SET count = count + excluded.count, amount = amount + excluded.amount
                """,
                // Attribution by payload hash; reports of unknown hashes stay in `reports` only.
                """
                INSERT OR IGNORE INTO message_reports (message_id, kind, device_id)
                SELECT m.id, r.kind, d.id FROM reports r
                CROSS JOIN messages m ON m.hash = r.hash AND m.app_id = r.app_id
                CROSS JOIN devices d ON d.app_id = r.app_id AND d.hwid = r.hwid
                WHERE r.id > ?1 AND r.id <= ?2 AND r.processed_at IS NULL AND r.kind IN ('delivery', 'push_stat') AND r.hash IS NOT NULL
                """,
            ] {
                try connection.prepare(sql).run(range)
            }
            try connection.prepare("UPDATE reports SET processed_at = ?3 WHERE \(batch)").run(range + [.integer(now)])
            return connection.changes
        }
    }

    /// Event counts and device sketches per (app, day, event) and per (app, day), merged into the
    /// stored rows.
    private func foldEvents(_ connection: SQLiteConnection, batch: String, range: [SQLiteValue]) throws {
        struct Key: Hashable {
            let app: Int64
            let day: Int64
            let name: String
        }
        var events: [Key: (count: Int64, devices: DeviceSketch)] = [:]
        var active: [Key: DeviceSketch] = [:]
        for (key, hwid) in try connection.prepare(
            "SELECT app_id, day, name, hwid FROM report_facts WHERE \(batch) AND kind = 'event'"
        ).rows(range, { (Key(app: $0.int(0), day: $0.int(1), name: $0.text(2)), $0.text(3)) }) {
            events[key, default: (0, DeviceSketch())].count += 1
            events[key]!.devices.insert(hwid)
            active[Key(app: key.app, day: key.day, name: ""), default: DeviceSketch()].insert(hwid)
        }
        let readEvent = try connection.prepare("SELECT devices FROM event_days WHERE app_id = ? AND day = ? AND name = ?")
        let writeEvent = try connection.prepare(
            """
            INSERT INTO event_days (app_id, day, name, count, devices) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT DO UPDATE SET count = count + excluded.count, devices = excluded.devices
            """)
        for (key, batch) in events {
            let stored: [SQLiteValue] = [.integer(key.app), .integer(key.day), .text(key.name)]
            var devices = try readEvent.first(stored) { try Self.sketch($0.blob(0)) } ?? DeviceSketch()
            devices.formUnion(batch.devices)
            try writeEvent.run(stored + [.integer(batch.count), .blob(devices.encoded)])
        }
        let readDay = try connection.prepare("SELECT devices FROM active_days WHERE app_id = ? AND day = ?")
        let writeDay = try connection.prepare("INSERT OR REPLACE INTO active_days (app_id, day, devices) VALUES (?, ?, ?)")
        for (key, batch) in active {
            let stored: [SQLiteValue] = [.integer(key.app), .integer(key.day)]
            var devices = try readDay.first(stored) { try Self.sketch($0.blob(0)) } ?? DeviceSketch()
            devices.formUnion(batch)
            try writeDay.run(stored + [.blob(devices.encoded)])
        }
    }

    static func sketch(_ bytes: [UInt8]) throws -> DeviceSketch {
        guard let sketch = DeviceSketch(encoded: bytes) else { throw StoreError.invalid("a stored device sketch is damaged") }
        return sketch
    }

    // MARK: Reading

    public func eventStatistics(app: String, from: Int64, to: Int64) throws(StoreError) -> EventStatistics {
        let appID = try database.appID(app)
        let window = Window(from: from, to: to)
        return try database.read { connection in
            try connection.readTransaction {
                let parameters: [SQLiteValue] = [.integer(appID), .integer(from), .integer(to), .integer(window.fullStart),
                                                 .integer(window.fullEnd), .integer(window.fullStart / Self.day),
                                                 .integer(window.fullEnd / Self.day)]
                // Each query binds the parameters it uses (the raw reports need ?1…?5, the rollups ?1, ?6, ?7).
                func rows<T>(_ sql: String, _ transform: (SQLiteStatement) throws -> T) throws -> [T] {
                    let statement = try connection.prepare(Self.raw + sql)
                    return try statement.rows(Array(parameters.prefix(statement.parameterCount)), transform)
                }
                var stats = EventStatistics()
                // Distinct devices: the stored sketches of the whole days, merged with the raw reports'.
                var eventDevices: [String: DeviceSketch] = [:]
                var dayDevices: [Int64: DeviceSketch] = [:]
                for (name, sketch) in try rows("SELECT name, devices FROM event_days WHERE \(Self.fullDays)", {
                    ($0.text(0), try Self.sketch($0.blob(1)))
                }) {
                    eventDevices[name, default: DeviceSketch()].formUnion(sketch)
                }
                for (day, sketch) in try rows("SELECT day, devices FROM active_days WHERE \(Self.fullDays)", {
                    ($0.int(0), try Self.sketch($0.blob(1)))
                }) {
                    dayDevices[day] = sketch
                }
                for (name, day, hwid) in try rows("SELECT DISTINCT name, day, hwid FROM raw WHERE kind = 'event'", {
                    ($0.text(0), $0.int(1), $0.text(2))
                }) {
                    eventDevices[name, default: DeviceSketch()].insert(hwid)
                    dayDevices[day, default: DeviceSketch()].insert(hwid)
                }
                stats.events = try rows(
                    """
                    SELECT name, sum(n) FROM (
                      SELECT name, count AS n FROM event_days WHERE \(Self.fullDays)
                      UNION ALL SELECT name, count(*) FROM raw WHERE kind = 'event' GROUP BY name)
                    GROUP BY name ORDER BY sum(n) DESC, name
                    """) { EventStatistics.Event(name: $0.text(0), count: Int($0.int(1)), devices: eventDevices[$0.text(0)]?.count ?? 0) }
                stats.screens = try rows(
                    """
                    SELECT screen, sum(n) FROM (
                      SELECT screen, count AS n FROM screen_days WHERE \(Self.fullDays)
                      UNION ALL SELECT screen, count(*) FROM raw WHERE screen IS NOT NULL GROUP BY screen)
                    GROUP BY screen ORDER BY sum(n) DESC, screen
                    """) { EventStatistics.Screen(name: $0.text(0), count: Int($0.int(1))) }
                if let sessions = try rows(
                    """
                    SELECT sum(s), sum(d), sum(ic), sum(i) FROM (
                      SELECT sessions AS s, duration_sum AS d, idle_count AS ic, idle_sum AS i FROM session_days WHERE \(Self.fullDays)
                      UNION ALL SELECT count(session_duration), total(session_duration), count(idle_seconds), total(idle_seconds) FROM raw)
                    """, { ($0.int(0), $0.double(1), $0.int(2), $0.double(3)) }).first {
                    stats.sessions = Int(sessions.0)
                    stats.averageSessionSeconds = sessions.0 > 0 ? sessions.1 / Double(sessions.0) : nil
                    stats.averageIdleSeconds = sessions.2 > 0 ? sessions.3 / Double(sessions.2) : nil
                }
                for (currency, count, amount) in try rows(
                    """
                    SELECT currency, sum(c), sum(a) FROM (
                      SELECT currency, count AS c, amount AS a FROM purchase_days WHERE \(Self.fullDays)
                      UNION ALL SELECT currency, count(*), total(amount) FROM raw WHERE is_purchase GROUP BY currency)
                    GROUP BY currency
                    """, { ($0.text(0), Int($0.int(1)), $0.double(2)) }) {
                    stats.purchases += count
                    if !currency.isEmpty || amount != 0 { stats.revenue[currency.isEmpty ? "unknown" : currency, default: 0] += amount }
                }
                stats.days = try rows(
                    """
                    SELECT day, date(day * 86400, 'unixepoch'), sum(n) FROM (
                      SELECT day, count AS n FROM event_days WHERE \(Self.fullDays)
                      UNION ALL SELECT day, count(*) FROM raw WHERE kind = 'event' GROUP BY day)
                    GROUP BY day ORDER BY day
                    """) { EventStatistics.Day(day: $0.text(1), events: Int($0.int(2)), devices: dayDevices[$0.int(0)]?.count ?? 0) }
                return stats
            }
        }
    }

    /// The whole UTC days inside `[from, to)`, read from the rollups; the rest is read raw.
    struct Window {
        let fullStart: Int64
        let fullEnd: Int64

        init(from: Int64, to: Int64) {
            let firstDay = Self.floorDiv(from + SQLiteAnalyticsStore.day - 1, SQLiteAnalyticsStore.day)
            let endDay = Self.floorDiv(to, SQLiteAnalyticsStore.day)
            if firstDay < endDay {
                (fullStart, fullEnd) = (firstDay * SQLiteAnalyticsStore.day, endDay * SQLiteAnalyticsStore.day)
            } else {
                (fullStart, fullEnd) = (to, to)
            }
        }

        static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
    }

    /// Parameters: ?1 app id, ?2 from, ?3 to, ?4 / ?5 the whole days' start and end (unix s),
    /// ?6 / ?7 the same as day numbers.
    static let fullDays = "app_id = ?1 AND day >= ?6 AND day < ?7"

    /// The reports a window reads raw: its partial days, and its whole days' unprocessed reports
    /// (found through the backlog's own index: the time index would walk every report of those days).
    static let raw = """
        WITH raw AS (
          SELECT * FROM report_facts WHERE app_id = ?1 AND kind IN ('event', 'purchase') AND occurred_at >= ?2 AND occurred_at < ?4
          UNION ALL
          SELECT * FROM report_facts WHERE app_id = ?1 AND kind IN ('event', 'purchase') AND occurred_at >= ?5 AND occurred_at < ?3
          UNION ALL
          SELECT * FROM report_facts WHERE id IN (
            SELECT id FROM reports INDEXED BY reports_unprocessed WHERE processed_at IS NULL AND app_id = ?1
              AND kind IN ('event', 'purchase') AND occurred_at >= ?4 AND occurred_at < ?5))

        """
}
