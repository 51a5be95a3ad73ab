import Core
import StoreCore

/// Reading reports as facts, and reading and writing the rollup tables.
///
/// The SQLite backend reads a report's attributes in SQL (its `report_facts` view); here they are
/// read in Swift, with the same meaning: SQLite's `json_extract` and `CAST(… AS REAL)` rules
/// (a string counts by its leading number, else 0; true and false are 1 and 0), which PostgreSQL's
/// casts do not have (they fail on such values, and one bad report would stop the whole batch).
extension ReportRollup {
    /// The report columns `fact` reads, in order: the body only for the reports whose attributes count.
    static let columns = """
        app_id, occurred_at, kind, name, hwid,
        CASE WHEN kind = 'purchase' OR name IN ('PW_ScreenOpen', 'PW_UserIdle', 'PW_ApplicationExit', 'PW_InAppPurchase')
          THEN body END
        """

    /// The fact of one report read with `columns`, which start at column `base`.
    static func fact(_ row: PostgresRow, base: Int32 = 0) -> ReportFact {
        let kind = row.text(base + 2)
        let name = row.text(base + 3)
        let isEvent = kind == "event"
        let body = row.optionalText(base + 5).flatMap { try? JSON.parse($0) } ?? .null
        let attributes = body["attributes"]
        var screen: String?
        var sessionDuration: Double?
        var idleSeconds: Double?
        var purchase: (currency: String, amount: Double)?
        if isEvent && name == "PW_ScreenOpen" { screen = attributes?["screen_name"].flatMap(extractedText) }
        if isEvent && (name == "PW_UserIdle" || name == "PW_ApplicationExit") { sessionDuration = attributes?["session_duration"].flatMap(real) }
        if isEvent && name == "PW_UserIdle" { idleSeconds = attributes?["idle_seconds"].flatMap(real) }
        if (isEvent && name == "PW_InAppPurchase") || kind == "purchase" {
            let currency = [attributes?["__currency"], attributes?["currency"], body["currency"]].lazy.compactMap { $0.flatMap(extractedText) }.first
            let price = body["price"].flatMap(real).map { $0 * (body["quantity"].flatMap(real) ?? 1) }
            let amount = attributes?["__amount"].flatMap(real) ?? attributes?["amount"].flatMap(real) ?? price ?? 0
            purchase = (currency ?? "", amount)
        }
        return ReportFact(app: row.int(base), day: StatisticsWindow.floorDiv(row.int(base + 1), StatisticsWindow.day),
                          isEvent: isEvent, name: name, hwid: row.text(base + 4), screen: screen, sessionDuration: sessionDuration,
                          idleSeconds: idleSeconds, purchase: purchase)
    }

    /// `json_extract` as text: strings as they are, other values as JSON text, null as nil.
    static func extractedText(_ value: JSON) -> String? {
        switch value {
        case .null: return nil
        case .string(let text): return text
        case .bool(let flag): return flag ? "1" : "0"
        default: return value.text
        }
    }

    /// `CAST(json_extract(…) AS REAL)`: numbers as they are, a string by its leading number (0
    /// without one), booleans 1 and 0, arrays and objects 0, null nil.
    static func real(_ value: JSON) -> Double? {
        switch value {
        case .null: return nil
        case .int(let number): return Double(number)
        case .double(let number): return number
        case .bool(let flag): return flag ? 1 : 0
        case .string(let text): return leadingNumber(text)
        case .array, .object: return 0
        }
    }

    /// The longest prefix of `text` (after leading spaces) that reads as a decimal number, or 0.
    static func leadingNumber(_ text: String) -> Double {
        let bytes = Array(text.utf8.drop { $0 == 0x20 || (0x09...0x0D).contains($0) })
        var end = 0
        func digits() -> Int {
            let start = end
            while end < bytes.count, (0x30...0x39).contains(bytes[end]) { end += 1 }
            return end - start
        }
        if end < bytes.count, bytes[end] == UInt8(ascii: "+") || bytes[end] == UInt8(ascii: "-") { end += 1 }
        var count = digits()
        if end < bytes.count, bytes[end] == UInt8(ascii: ".") {
            end += 1
            count += digits()
        }
        guard count > 0 else { return 0 }
        var valid = end
        if end < bytes.count, bytes[end] == UInt8(ascii: "e") || bytes[end] == UInt8(ascii: "E") {
            end += 1
            if end < bytes.count, bytes[end] == UInt8(ascii: "+") || bytes[end] == UInt8(ascii: "-") { end += 1 }
            if digits() > 0 { valid = end }
        }
        return Double(String(decoding: bytes[..<valid], as: UTF8.self)) ?? 0
    }

    /// Adds these figures to the stored rollups: counts add up in one multi-row upsert per table;
    /// device sketches merge under the row's lock (rows taken in key order, so that two workers
    /// adding to the same days never wait for each other in a circle).
    func store(_ connection: PostgresConnection) throws {
        let keys = days.keys.sorted { ($0.app, $0.day) < ($1.app, $1.day) }
        let empty = PostgresValue.bytea(DeviceSketch().encoded)
        for key in keys {
            let figures = days[key]!
            let day: [PostgresValue] = [.integer(key.app), .integer(key.day)]
            for name in figures.events.keys.sorted() {
                let event = figures.events[name]!
                try connection.run("INSERT INTO event_days (app_id, day, name, count, devices) VALUES ($1, $2, $3, 0, $4) ON CONFLICT DO NOTHING",
                                   day + [.text(name), empty])
                var devices = try connection.first("SELECT devices FROM event_days WHERE app_id = $1 AND day = $2 AND name = $3 FOR UPDATE",
                                                   day + [.text(name)]) { try Self.sketch($0.bytes(0)) } ?? DeviceSketch()
                devices.formUnion(event.devices)
                try connection.run("UPDATE event_days SET count = count + $4, devices = $5 WHERE app_id = $1 AND day = $2 AND name = $3",
                                   day + [.text(name), .integer(event.count), .bytea(devices.encoded)])
            }
            if !figures.events.isEmpty {
                try connection.run("INSERT INTO active_days (app_id, day, devices) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", day + [empty])
                var devices = try connection.first("SELECT devices FROM active_days WHERE app_id = $1 AND day = $2 FOR UPDATE", day) {
                    try Self.sketch($0.bytes(0))
                } ?? DeviceSketch()
                devices.formUnion(figures.devices)
                try connection.run("UPDATE active_days SET devices = $3 WHERE app_id = $1 AND day = $2", day + [.bytea(devices.encoded)])
            }
        }
        var screens: (apps: [Int64], days: [Int64], names: [String?], counts: [Int64]) = ([], [], [], [])
        var sessions: (apps: [Int64], days: [Int64], sessions: [Int64], durations: [Double], idleCounts: [Int64], idleSums: [Double]) =
            ([], [], [], [], [], [])
        var purchases: (apps: [Int64], days: [Int64], currencies: [String?], counts: [Int64], amounts: [Double]) = ([], [], [], [], [])
        for key in keys {
            let figures = days[key]!
            for screen in figures.screens.keys.sorted() {
                screens.apps.append(key.app)
                screens.days.append(key.day)
                screens.names.append(screen)
                screens.counts.append(figures.screens[screen]!)
            }
            if figures.sessions > 0 || figures.idleCount > 0 {
                sessions.apps.append(key.app)
                sessions.days.append(key.day)
                sessions.sessions.append(figures.sessions)
                sessions.durations.append(figures.durationSum)
                sessions.idleCounts.append(figures.idleCount)
                sessions.idleSums.append(figures.idleSum)
            }
            for currency in figures.purchases.keys.sorted() {
                purchases.apps.append(key.app)
                purchases.days.append(key.day)
                purchases.currencies.append(currency)
                purchases.counts.append(figures.purchases[currency]!.count)
                purchases.amounts.append(figures.purchases[currency]!.amount)
            }
        }
        if !screens.apps.isEmpty {
            try connection.run(
                """
                INSERT INTO screen_days (app_id, day, screen, count)
                SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[])
                ON CONFLICT (app_id, day, screen) DO UPDATE SET count = screen_days.count + excluded.count
                """, [.integers(screens.apps), .integers(screens.days), .texts(screens.names), .integers(screens.counts)])
        }
        if !sessions.apps.isEmpty {
            try connection.run(
                """
                INSERT INTO session_days (app_id, day, sessions, duration_sum, idle_count, idle_sum)
                SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::float8[], $5::bigint[], $6::float8[])
                ON CONFLICT (app_id, day) DO UPDATE SET sessions = session_days.sessions + excluded.sessions,
                  duration_sum = session_days.duration_sum + excluded.duration_sum,
                  idle_count = session_days.idle_count + excluded.idle_count, idle_sum = session_days.idle_sum + excluded.idle_sum
                """, [.integers(sessions.apps), .integers(sessions.days), .integers(sessions.sessions), .doubles(sessions.durations),
                      .integers(sessions.idleCounts), .doubles(sessions.idleSums)])
        }
        if !purchases.apps.isEmpty {
            try connection.run(
                """
                INSERT INTO purchase_days (app_id, day, currency, count, amount)
                SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::float8[])
                ON CONFLICT (app_id, day, currency) DO UPDATE SET count = purchase_days.count + excluded.count,
                  amount = purchase_days.amount + excluded.amount
                """, [.integers(purchases.apps), .integers(purchases.days), .texts(purchases.currencies), .integers(purchases.counts),
                      .doubles(purchases.amounts)])
        }
    }
}
