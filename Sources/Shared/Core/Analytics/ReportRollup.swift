/// What a set of SDK reports adds up to, per application and UTC day: the shape of the rollup
/// tables (`event_days`, `active_days`, `screen_days`, `session_days`, `purchase_days`). Workers
/// build one from a batch of reports and add it to the tables; readers load the tables' whole days
/// into one, add the reports read raw, and turn it into `EventStatistics`. Counting lives here
/// only; what a report's attributes mean lives in the `report_facts` view.
package struct ReportRollup {
    package struct Day: Hashable {
        package let app: Int64
        package let day: Int64

        package init(app: Int64, day: Int64) {
            self.app = app
            self.day = day
        }
    }

    package struct Figures {
        package var events: [String: (count: Int64, devices: DeviceSketch)] = [:]
        package var devices = DeviceSketch()
        package var screens: [String: Int64] = [:]
        package var sessions: Int64 = 0
        package var durationSum = 0.0
        package var idleCount: Int64 = 0
        package var idleSum = 0.0
        package var purchases: [String: (count: Int64, amount: Double)] = [:]

        package init() {}
    }

    package var days: [Day: Figures] = [:]

    package init() {}

    /// Adds one report.
    package mutating func add(_ fact: ReportFact) {
        let key = Day(app: fact.app, day: fact.day)
        var figures = days.removeValue(forKey: key) ?? Figures()
        if fact.isEvent {
            figures.events[fact.name, default: (0, DeviceSketch())].count += 1
            figures.events[fact.name]!.devices.insert(fact.hwid)
            figures.devices.insert(fact.hwid)
        }
        if let screen = fact.screen { figures.screens[screen, default: 0] += 1 }
        if let duration = fact.sessionDuration {
            figures.sessions += 1
            figures.durationSum += duration
        }
        if let idle = fact.idleSeconds {
            figures.idleCount += 1
            figures.idleSum += idle
        }
        if let purchase = fact.purchase {
            figures.purchases[purchase.currency, default: (0, 0)].count += 1
            figures.purchases[purchase.currency]!.amount += purchase.amount
        }
        days[key] = figures
    }

    // MARK: Answers

    /// The statistics of all the days held (one application's).
    package var statistics: EventStatistics {
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

/// One SDK report as the rollup counts it: its application and UTC day, and what it says.
package struct ReportFact {
    /// The longest screen name and currency kept, in UTF-8 bytes: they key the rollup rows
    /// (`screen_days`, `purchase_days`), and PostgreSQL's index entries hold at most 2,704 bytes.
    package static let maxKeyBytes = 256

    package var app: Int64
    package var day: Int64
    package var isEvent: Bool
    /// The event's name (events only).
    package var name: String
    package var hwid: String
    /// PW_ScreenOpen's screen.
    package var screen: String?
    /// PW_ApplicationExit's session length, seconds.
    package var sessionDuration: Double?
    /// PW_UserIdle's idle time, seconds.
    package var idleSeconds: Double?
    package var purchase: (currency: String, amount: Double)?

    package init(app: Int64, day: Int64, isEvent: Bool, name: String, hwid: String, screen: String?, sessionDuration: Double?,
                 idleSeconds: Double?, purchase: (currency: String, amount: Double)?) {
        self.app = app
        self.day = day
        self.isEvent = isEvent
        self.name = name
        self.hwid = hwid
        self.screen = screen.map(Self.key)
        self.sessionDuration = sessionDuration
        self.idleSeconds = idleSeconds
        self.purchase = purchase.map { (Self.key($0.currency), $0.amount) }
    }

    /// A screen name or currency as the rollups keep it: up to its first NUL (where SQLite's text
    /// ends; PostgreSQL's cannot hold one), and at most `maxKeyBytes`, cut at a character boundary.
    package static func key(_ text: String) -> String {
        let kept = text.utf8.prefix { $0 != 0 }
        guard kept.count > maxKeyBytes else { return String(Substring(kept)) }
        var end = kept.index(kept.startIndex, offsetBy: maxKeyBytes)
        // Back to the start of the character the limit falls in (a continuation byte is 10xxxxxx).
        while kept[end] & 0xC0 == 0x80 { kept.formIndex(before: &end) }
        return String(Substring(kept[..<end]))
    }
}
