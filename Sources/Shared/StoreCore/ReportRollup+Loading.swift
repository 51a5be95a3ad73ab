import Core

/// Reading the per-day rollup tables, alike on both backends.
extension ReportRollup {
    /// Loads the rollups of `app`'s days `[first, end)`.
    package static func load<Connection: StatementRunner>(_ connection: Connection, app: Int64, days first: Int64,
                                                          _ end: Int64) throws -> ReportRollup {
        var rollup = ReportRollup()
        let range: [Connection.Value] = [.integer(app), .integer(first), .integer(end)]
        let daysInRange = "WHERE app_id = $1 AND day >= $2 AND day < $3"
        func each(_ sql: String, _ body: (inout Figures, Connection.Row) throws -> Void) throws {
            _ = try connection.select(sql, range) { row in
                try body(&rollup.days[Day(app: app, day: row.int(0)), default: Figures()], row)
            }
        }
        try each("SELECT day, name, count, devices FROM event_days \(daysInRange)") { figures, row in
            figures.events[row.text(1)] = (row.int(2), try sketch(row.bytes(3)))
        }
        try each("SELECT day, devices FROM active_days \(daysInRange)") { figures, row in figures.devices = try sketch(row.bytes(1)) }
        try each("SELECT day, screen, count FROM screen_days \(daysInRange)") { figures, row in figures.screens[row.text(1)] = row.int(2) }
        try each("SELECT day, sessions, duration_sum, idle_count, idle_sum FROM session_days \(daysInRange)") { figures, row in
            (figures.sessions, figures.durationSum, figures.idleCount, figures.idleSum) = (row.int(1), row.double(2), row.int(3), row.double(4))
        }
        try each("SELECT day, currency, count, amount FROM purchase_days \(daysInRange)") { figures, row in
            figures.purchases[row.text(1)] = (row.int(2), row.double(3))
        }
        return rollup
    }

    /// A stored device sketch; a damaged one is an error.
    package static func sketch(_ bytes: [UInt8]) throws -> DeviceSketch {
        guard let sketch = DeviceSketch(encoded: bytes) else { throw StoreError.invalid("a stored device sketch is damaged") }
        return sketch
    }
}
