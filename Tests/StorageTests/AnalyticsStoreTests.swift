import Foundation
import Testing
import Core
import SDKClient
import TestSupport

/// Event statistics must be the same whether reports are raw, partly processed, processed twice,
/// or fully folded into the per-day rollups, and equal to what the reports say, counted here
/// independently; on every backend.
@Suite struct AnalyticsStoreTests {
    @Test(arguments: Backend.allCases) func statisticsAreTheSameRawPartlyProcessedAndProcessedTwice(_ backend: Backend) throws {
        try AnalyticsStoreContract(backend).statisticsAreTheSameRawPartlyProcessedAndProcessedTwice()
    }

    @Test(arguments: Backend.allCases) func screensAndCurrenciesAreCutAlikeAtNULAndTheirCap(_ backend: Backend) throws {
        try AnalyticsStoreContract(backend).screensAndCurrenciesAreCutAlikeAtNULAndTheirCap()
    }

    @Test(arguments: Backend.allCases) func retentionDeletesOnlyOldProcessedReportsAndTheCountsStay(_ backend: Backend) throws {
        try AnalyticsStoreContract(backend).retentionDeletesOnlyOldProcessedReportsAndTheCountsStay()
    }
}

/// The bodies of `AnalyticsStoreTests`, on a fresh database of one backend.
struct AnalyticsStoreContract {
    let fixture: StoreFixture
    let devices: any DeviceStore
    let analytics: any AnalyticsStore
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s"),
                       AppConfiguration(code: "APP-2", name: "Two", apiToken: "u", sink: "s")]
    static let day: Int64 = 86_400
    static let start: Int64 = 1_780_000_000 - 1_780_000_000 % 86_400

    init(_ backend: Backend) throws {
        fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        devices = stores.devices
        analytics = stores.analytics
    }

    /// A deterministic mix of SDK reports over five days, iOS (numbers as strings) and Android typing.
    static func reports(count: Int, seed: UInt64) -> [SDKReport] {
        var generator = SplitMix64(seed: seed)
        func pick(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &generator) }
        let names = ["PW_ScreenOpen", "PW_ScreenOpen", "PW_UserIdle", "PW_ApplicationExit", "PW_InAppPurchase", "Search", "Login"]
        return (0..<count).map { index in
            let ios = pick(2) == 0
            func number(_ value: Int) -> JSON { ios ? .string(String(value)) : .int(Int64(value)) }
            let at = start + Int64(pick(5 * 86_400))
            let hwid = "H\(pick(25))"
            let app = pick(6) == 0 ? "APP-2" : "APP-1"
            if pick(12) == 0 {
                return SDKReport(kind: .purchase, app: app, hwid: hwid, userID: nil, platform: ios ? 1 : 3, name: nil, hash: nil,
                                 body: ["price": number(2), "quantity": number(pick(3) + 1), "currency": "EUR"],
                                 timestampUTC: at, timestampCurrent: at)
            }
            let name = names[pick(names.count)]
            var attributes: [String: JSON] = [:]
            switch name {
            case "PW_ScreenOpen": attributes["screen_name"] = .string(["Home", "Cart", "Item"][pick(3)])
            case "PW_UserIdle": attributes = ["idle_seconds": number(pick(100)), "session_duration": number(pick(900))]
            case "PW_ApplicationExit": attributes = ["session_duration": number(pick(900))]
            case "PW_InAppPurchase": attributes = ["__amount": number(pick(50)), "__currency": "USD"]
            default: break
            }
            // Some reports carry no timestamp: they count at arrival (`now` of `record`).
            let stamped = index % 17 != 0
            return SDKReport(kind: .event, app: app, hwid: hwid, userID: nil, platform: ios ? 1 : 3, name: name, hash: nil,
                             body: ["event": .string(name), "attributes": .object(attributes)],
                             timestampUTC: stamped ? at : nil, timestampCurrent: stamped ? at : nil)
        }
    }

    /// The statistics of `[from, to)` for `app`, computed from the reports themselves.
    static func expected(_ reports: [SDKReport], app: String, from: Int64, to: Int64, arrival: Int64) -> EventStatistics {
        func value(_ json: JSON?) -> Double? { json?.lenientDouble }
        let inWindow = reports.filter { $0.app == app && (from..<to).contains($0.timestampUTC ?? arrival) }
        let events = inWindow.filter { $0.kind == .event }
        var stats = EventStatistics()
        stats.events = Dictionary(grouping: events, by: { $0.name ?? "" })
            .map { EventStatistics.Event(name: $0.key, count: $0.value.count, devices: Set($0.value.map(\.hwid)).count) }
            .sorted { ($1.count, $0.name) < ($0.count, $1.name) }
        stats.screens = Dictionary(grouping: events.compactMap { $0.name == "PW_ScreenOpen" ? $0.body["attributes"]?["screen_name"]?.stringValue : nil },
                                   by: { $0 })
            .map { EventStatistics.Screen(name: $0.key, count: $0.value.count) }
            .sorted { ($1.count, $0.name) < ($0.count, $1.name) }
        let durations = events.filter { ["PW_UserIdle", "PW_ApplicationExit"].contains($0.name) }
            .compactMap { value($0.body["attributes"]?["session_duration"]) }
        let idle = events.filter { $0.name == "PW_UserIdle" }.compactMap { value($0.body["attributes"]?["idle_seconds"]) }
        stats.sessions = durations.count
        stats.averageSessionSeconds = durations.isEmpty ? nil : durations.reduce(0, +) / Double(durations.count)
        stats.averageIdleSeconds = idle.isEmpty ? nil : idle.reduce(0, +) / Double(idle.count)
        for report in inWindow {
            if report.kind == .purchase {
                stats.purchases += 1
                stats.revenue["EUR", default: 0] += value(report.body["price"])! * value(report.body["quantity"])!
            } else if report.name == "PW_InAppPurchase" {
                stats.purchases += 1
                stats.revenue["USD", default: 0] += value(report.body["attributes"]?["__amount"])!
            }
        }
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd"
        formatter.timeZone = TimeZone(identifier: "UTC")
        stats.days = Dictionary(grouping: events, by: { ($0.timestampUTC ?? arrival) / Self.day })
            .map { EventStatistics.Day(day: formatter.string(from: Date(timeIntervalSince1970: Double($0.key * Self.day))),
                                       events: $0.value.count, devices: Set($0.value.map(\.hwid)).count) }
            .sorted { $0.day < $1.day }
        return stats
    }

    static let windows: [(Int64, Int64)] = [
        (start, start + 5 * day), (start + 3_600, start + 3 * day + 7_200), (start + day, start + 2 * day),
        (start + 100, start + 200), (start + 2 * day - 10, start + 2 * day + 10), (0, start + 10 * day), (start + 9 * day, start + 10 * day),
    ]

    func check(_ reports: [SDKReport], arrival: Int64, _ comment: Comment) throws {
        for app in ["APP-1", "APP-2"] {
            for (from, to) in Self.windows {
                let stats = try analytics.eventStatistics(app: app, from: from, to: to)
                let expected = Self.expected(reports, app: app, from: from, to: to, arrival: arrival)
                #expect(stats.events == expected.events, "\(comment) \(app) [\(from), \(to)) events")
                #expect(stats.screens == expected.screens, "\(comment) \(app) [\(from), \(to)) screens")
                #expect(stats.days == expected.days, "\(comment) \(app) [\(from), \(to)) days")
                #expect(stats.sessions == expected.sessions && stats.purchases == expected.purchases, "\(comment) \(app) [\(from), \(to))")
                #expect(Self.close(stats.averageSessionSeconds, expected.averageSessionSeconds), "\(comment) \(app) [\(from), \(to))")
                #expect(Self.close(stats.averageIdleSeconds, expected.averageIdleSeconds), "\(comment) \(app) [\(from), \(to))")
                #expect(stats.revenue.keys == expected.revenue.keys, "\(comment) \(app) [\(from), \(to)) revenue")
                for (currency, amount) in expected.revenue { #expect(Self.close(stats.revenue[currency], amount)) }
            }
        }
    }

    static func close(_ a: Double?, _ b: Double?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (a?, b?): return abs(a - b) < 1e-6
        default: return false
        }
    }

    func statisticsAreTheSameRawPartlyProcessedAndProcessedTwice() throws {
        let arrival = Self.start + 2 * Self.day + 5
        let reports = Self.reports(count: 900, seed: 7)
        try devices.record(reports, now: arrival)
        try check(reports, arrival: arrival, "raw")
        var backlog = try analytics.reportBacklog()
        #expect(backlog.firstUnprocessed == 1 && backlog.last == 900)

        // Out of order, overlapping, and one range twice.
        #expect(try analytics.processReports(after: 300, through: 550, now: arrival).count == 250)
        #expect(try analytics.processReports(after: 500, through: 700, now: arrival).count == 150)
        #expect(try analytics.processReports(after: 300, through: 550, now: arrival).count == 0)
        backlog = try analytics.reportBacklog()
        #expect(backlog.firstUnprocessed == 1)
        try check(reports, arrival: arrival, "partly processed")

        #expect(try analytics.processReports(after: 0, through: 900, now: arrival).count == 500)
        backlog = try analytics.reportBacklog()
        #expect(backlog.firstUnprocessed == nil && backlog.last == 900)
        try check(reports, arrival: arrival, "processed")

        // Reports that arrive later (the SDK retries for days) join the same days.
        let late = Self.reports(count: 200, seed: 8)
        try devices.record(late, now: arrival)
        try check(reports + late, arrival: arrival, "processed + raw")
        #expect(try analytics.processReports(after: 900, through: 1_100, now: arrival).count == 200)
        try check(reports + late, arrival: arrival, "all processed")
    }

    /// Screen names and currencies over `ReportFact.maxKeyBytes`, or holding a NUL, are counted
    /// under the same cut key raw and processed, on both backends (PostgreSQL's index entries could
    /// not hold them whole, nor its text a NUL).
    func screensAndCurrenciesAreCutAlikeAtNULAndTheirCap() throws {
        let at = Self.start + 3_600
        // Hexadecimal digits of a hash compress poorly, as PostgreSQL would compress an index entry.
        let long = (0..<200).map { String(UInt64($0 + 1) &* 0x9E37_79B9_7F4A_7C15, radix: 16) }.joined()
        let cut = String(long.prefix(ReportFact.maxKeyBytes))
        func event(_ name: String, _ attributes: [String: JSON]) -> SDKReport {
            SDKReport(kind: .event, app: "APP-1", hwid: "H1", userID: nil, platform: 3, name: name, hash: nil,
                      body: ["event": .string(name), "attributes": .object(attributes)], timestampUTC: at, timestampCurrent: at)
        }
        let reports = [
            event("PW_ScreenOpen", ["screen_name": .string(long + "a")]), event("PW_ScreenOpen", ["screen_name": .string(long + "b")]),
            event("PW_ScreenOpen", ["screen_name": "Home\u{0}Evil"]), event("PW_ScreenOpen", ["screen_name": "Home"]),
            event("PW_InAppPurchase", ["__currency": .string(long), "__amount": 2]),
            event("PW_InAppPurchase", ["__currency": "EUR\u{0}x", "__amount": 3]),
            SDKReport(kind: .purchase, app: "APP-1", hwid: "H1", userID: nil, platform: 3, name: nil, hash: nil,
                      body: ["price": 4, "quantity": 1, "currency": .string(long + "c")], timestampUTC: at, timestampCurrent: at),
        ]
        try devices.record(reports, now: at)
        func check(_ comment: Comment) throws {
            for (from, to) in [(Self.start, Self.start + Self.day), (Self.start + 100, Self.start + 7_200)] {
                let stats = try analytics.eventStatistics(app: "APP-1", from: from, to: to)
                #expect(Set(stats.screens.map { "\($0.name) \($0.count)" }) == ["\(cut) 2", "Home 2"], comment)
                #expect(stats.purchases == 3 && stats.revenue.keys.sorted() == ["EUR", cut].sorted(), comment)
                #expect(stats.revenue[cut] == 6 && stats.revenue["EUR"] == 3, comment)
            }
        }
        try check("raw")
        #expect(try analytics.processReports(after: 0, through: Int64(reports.count), now: at) == ReportsProcessed(count: reports.count))
        try check("processed")
    }

    func retentionDeletesOnlyOldProcessedReportsAndTheCountsStay() throws {
        let arrival = Self.start + 2 * Self.day + 5
        let old = Self.reports(count: 600, seed: 11)
        try devices.record(old, now: arrival)
        #expect(try analytics.processReports(after: 0, through: 400, now: arrival).count == 400)
        let recent = Self.reports(count: 100, seed: 12)
        try devices.record(recent, now: arrival + 100 * Self.day)
        let window = (from: Self.start, to: Self.start + 5 * Self.day)
        let before = try analytics.eventStatistics(app: "APP-1", from: window.from, to: window.to)
        // Nothing is older than the bound yet.
        #expect(try analytics.pruneReports(receivedBefore: arrival, limit: 1_000) == 0)
        // Only processed reports received before the bound go, in batches.
        #expect(try analytics.pruneReports(receivedBefore: arrival + Self.day, limit: 250) == 250)
        #expect(try analytics.pruneReports(receivedBefore: arrival + Self.day, limit: 250) == 150)
        #expect(try analytics.pruneReports(receivedBefore: arrival + Self.day, limit: 250) == 0)
        let remaining = try fixture.count("SELECT count(*) FROM reports")
        #expect(remaining == 300, "200 old unprocessed + 100 recent")
        // Whole days' counts come from the rollups: they stay.
        let after = try analytics.eventStatistics(app: "APP-1", from: window.from, to: window.to)
        #expect(after.events == before.events && after.days == before.days && after.screens == before.screens)
    }
}
