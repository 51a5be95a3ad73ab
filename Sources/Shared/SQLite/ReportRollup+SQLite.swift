import Core
import StoreCore

/// Reading and writing the rollup tables, and reading reports through the `report_facts` view.
extension ReportRollup {
    /// The `report_facts` columns `add` reads, in order.
    static let columns = "app_id, day, kind, name, hwid, screen, session_duration, idle_seconds, is_purchase, currency, amount"

    /// Adds one report read with `columns`.
    mutating func add(_ row: SQLiteStatement) {
        add(ReportFact(
            app: row.int(0), day: row.int(1), isEvent: row.text(2) == "event", name: row.text(3), hwid: row.text(4),
            screen: row.optionalText(5), sessionDuration: row.optionalDouble(6), idleSeconds: row.optionalDouble(7),
            purchase: row.int(8) != 0 ? (row.text(9), row.double(10)) : nil))
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
}
