/// What a set of SDK reports adds up to, per application and UTC day: the shape of the rollup
/// tables (`event_days`, `active_days`, `screen_days`, `session_days`, `purchase_days`). Workers
/// build one from a batch of reports and add it to the tables; readers load the tables' whole days
/// into one, add the reports read raw, and turn it into `EventStatistics`. Counting lives here
/// only; what a report's attributes mean lives in the `report_facts` view.
struct ReportRollup {
    struct Day: Hashable {
        let app: Int64
        let day: Int64
    }

    struct Figures {
        var events: [String: (count: Int64, devices: DeviceSketch)] = [:]
        var devices = DeviceSketch()
        var screens: [String: Int64] = [:]
        var sessions: Int64 = 0
        var durationSum = 0.0
        var idleCount: Int64 = 0
        var idleSum = 0.0
        var purchases: [String: (count: Int64, amount: Double)] = [:]
    }

    var days: [Day: Figures] = [:]

    /// The `report_facts` columns `add` reads, in order.
    static let columns = "app_id, day, kind, name, hwid, screen, session_duration, idle_seconds, is_purchase, currency, amount"

    /// Adds one report read with `columns`.
    mutating func add(_ row: SQLiteStatement) {
        let key = Day(app: row.int(0), day: row.int(1))
        var figures = days.removeValue(forKey: key) ?? Figures()
        let hwid = row.text(4)
        if row.text(2) == "event" {
            let name = row.text(3)
            figures.events[name, default: (0, DeviceSketch())].count += 1
            figures.events[name]!.devices.insert(hwid)
            figures.devices.insert(hwid)
        }
        if let screen = row.optionalText(5) { figures.screens[screen, default: 0] += 1 }
        if let duration = row.optionalDouble(6) {
            figures.sessions += 1
            figures.durationSum += duration
        }
        if let idle = row.optionalDouble(7) {
            figures.idleCount += 1
            figures.idleSum += idle
        }
        if row.int(8) != 0 {
            figures.purchases[row.text(9), default: (0, 0)].count += 1
            figures.purchases[row.text(9)]!.amount += row.double(10)
        }
        days[key] = figures
    }

    // MARK: Tables

    /// Loads the rollups of `app`'s days `[first, end)`.
    static func load(_ connection: SQLiteConnection, app: Int64, days first: Int64, _ end: Int64) throws -> ReportRollup {
        var rollup = ReportRollup()
        let range: [SQLiteValue] = [.integer(app), .integer(first), .integer(end)]
        let daysInRange = "WHERE app_id = ?1 AND day >= ?2 AND day < ?3"
        func each(_ sql: String, _ body: (inout Figures, SQLiteStatement) throws -> Void) throws {
            let statement = try connection.prepare(sql)
            _ = try statement.rows(range) { row in
                let key = Day(app: app, day: row.int(0))
                try body(&rollup.days[key, default: Figures()], row)
            }
        }
        try each("SELECT day, name, count, devices FROM event_days \(daysInRange)") { figures, row in
            figures.events[row.text(1)] = (row.int(2), try sketch(row.blob(3)))
        }
        try each("SELECT day, devices FROM active_days \(daysInRange)") { figures, row in figures.devices = try sketch(row.blob(1)) }
        try each("SELECT day, screen, count FROM screen_days \(daysInRange)") { figures, row in figures.screens[row.text(1)] = row.int(2) }
        try each("SELECT day, sessions, duration_sum, idle_count, idle_sum FROM session_days \(daysInRange)") { figures, row in
            (figures.sessions, figures.durationSum, figures.idleCount, figures.idleSum) = (row.int(1), row.double(2), row.int(3), row.double(4))
        }
        try each("SELECT day, currency, count, amount FROM purchase_days \(daysInRange)") { figures, row in
            figures.purchases[row.text(1)] = (row.int(2), row.double(3))
        }
        return rollup
    }

    /// Adds these figures to the stored rollups (counts add up; device sketches merge).
    func store(_ connection: SQLiteConnection) throws {
        let readEvent = try connection.prepare("SELECT devices FROM event_days WHERE app_id = ? AND day = ? AND name = ?")
        let writeEvent = try connection.prepare(
            """
            INSERT INTO event_days (app_id, day, name, count, devices) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT DO UPDATE SET count = count + excluded.count, devices = excluded.devices
            """)
        let readDay = try connection.prepare("SELECT devices FROM active_days WHERE app_id = ? AND day = ?")
        let writeDay = try connection.prepare("INSERT OR REPLACE INTO active_days (app_id, day, devices) VALUES (?, ?, ?)")
        let writeScreen = try connection.prepare(
            "INSERT INTO screen_days (app_id, day, screen, count) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET count = count + excluded.count")
        let writeSessions = try connection.prepare(
            """
            INSERT INTO session_days (app_id, day, sessions, duration_sum, idle_count, idle_sum) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT DO UPDATE SET sessions = sessions + excluded.sessions, duration_sum = duration_sum + excluded.duration_sum,
              idle_count = idle_count + excluded.idle_count, idle_sum = idle_sum + excluded.idle_sum
            """)
        let writePurchase = try connection.prepare(
            """
            INSERT INTO purchase_days (app_id, day, currency, count, amount) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT DO UPDATE SET count = count + excluded.count, amount = amount + excluded.amount
            """)
        for (key, figures) in days {
            let day: [SQLiteValue] = [.integer(key.app), .integer(key.day)]
            for (name, event) in figures.events {
                var devices = try readEvent.first(day + [.text(name)]) { try Self.sketch($0.blob(0)) } ?? DeviceSketch()
                devices.formUnion(event.devices)
                try writeEvent.run(day + [.text(name), .integer(event.count), .blob(devices.encoded)])
            }
            if !figures.events.isEmpty {
                var devices = try readDay.first(day) { try Self.sketch($0.blob(0)) } ?? DeviceSketch()
                devices.formUnion(figures.devices)
                try writeDay.run(day + [.blob(devices.encoded)])
            }
            for (screen, count) in figures.screens { try writeScreen.run(day + [.text(screen), .integer(count)]) }
            if figures.sessions > 0 || figures.idleCount > 0 {
                try writeSessions.run(day + [.integer(figures.sessions), .real(figures.durationSum), .integer(figures.idleCount),
                                             .real(figures.idleSum)])
            }
            for (currency, purchase) in figures.purchases {
                try writePurchase.run(day + [.text(currency), .integer(purchase.count), .real(purchase.amount)])
            }
        }
    }

    static func sketch(_ bytes: [UInt8]) throws -> DeviceSketch {
        guard let sketch = DeviceSketch(encoded: bytes) else { throw StoreError.invalid("a stored device sketch is damaged") }
        return sketch
    }

    // MARK: Answers

    /// The statistics of all the days held (one application's).
    var statistics: EventStatistics {
        var stats = EventStatistics()
        var events: [String: (count: Int64, devices: DeviceSketch)] = [:]
        var screens: [String: Int64] = [:]
        var durationSum = 0.0, idleCount: Int64 = 0, idleSum = 0.0
        for (key, figures) in days.sorted(by: { $0.key.day < $1.key.day }) {
            for (name, event) in figures.events {
                events[name, default: (0, DeviceSketch())].count += event.count
                events[name]!.devices.formUnion(event.devices)
            }
            for (screen, count) in figures.screens { screens[screen, default: 0] += count }
            stats.sessions += Int(figures.sessions)
            durationSum += figures.durationSum
            idleCount += figures.idleCount
            idleSum += figures.idleSum
            for (currency, purchase) in figures.purchases {
                stats.purchases += Int(purchase.count)
                if !currency.isEmpty || purchase.amount != 0 {
                    stats.revenue[currency.isEmpty ? "unknown" : currency, default: 0] += purchase.amount
                }
            }
            let dayEvents = figures.events.values.reduce(0) { $0 + $1.count }
            if dayEvents > 0 {
                stats.days.append(EventStatistics.Day(day: String(TagDate.format(key.day * 86_400).prefix(10)), events: Int(dayEvents), devices: figures.devices.count))
            }
        }
        stats.events = events.map { EventStatistics.Event(name: $0.key, count: Int($0.value.count), devices: $0.value.devices.count) }
            .sorted { ($1.count, $0.name) < ($0.count, $1.name) }
        stats.screens = screens.map { EventStatistics.Screen(name: $0.key, count: Int($0.value)) }
            .sorted { ($1.count, $0.name) < ($0.count, $1.name) }
        stats.averageSessionSeconds = stats.sessions > 0 ? durationSum / Double(stats.sessions) : nil
        stats.averageIdleSeconds = idleCount > 0 ? idleSum / Double(idleCount) : nil
        return stats
    }
}
