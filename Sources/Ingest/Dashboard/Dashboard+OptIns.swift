import Core

extension Dashboard {
    /// The push primer's section: permission changes per day over the last 14 days (UTC), as charts
    /// of opt-ins and opt-outs and a table per day and app version.
    func optInSection(app: AppConfiguration, today: Int64) throws -> String {
        let history = try analytics.optIns(app: app.code, from: today - 13 * 86_400, to: today + 86_400)
        let days = (0..<14).map { today - Int64(13 - $0) * 86_400 }
        func perDay(_ count: (OptInCount) -> Int) -> [(label: String, value: Double, text: String)] {
            days.map { day in
                let total = history.filter { $0.day == day }.reduce(0) { $0 + count($1) }
                return (String(TagDate.format(day).prefix(10).suffix(5)), Double(total), String(total))
            }
        }
        var html = HTML.barChart(title: "Opt-ins per day (UTC, last 14 days)", perDay(\.optedIn), color: "#1f9d6b")
        html += HTML.barChart(title: "Opt-outs per day (UTC, last 14 days)", perDay(\.optedOut), color: "#d9534f")
        html += HTML.section(
            "Opt-in history (last 14 days)", columns: ["Day (UTC)", "App version", "Registered", "Opted in", "Opted out"],
            numeric: ["Registered", "Opted in", "Opted out"],
            rows: history.reversed().map {
                [String(TagDate.format($0.day).prefix(10)), $0.appVersion ?? "—", String($0.registered), String($0.optedIn), String($0.optedOut)]
            },
            empty: "No registrations yet.")
        return html
    }
}
