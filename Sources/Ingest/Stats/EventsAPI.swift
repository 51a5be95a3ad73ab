import Core
import HTTPServer

/// `GET /api/v1/apps/<app code>/events?from=<unix s>&to=<unix s>` with `Authorization: Token <api_token>`:
/// what the SDKs reported in that window (default: the last 7 days). `GET …/opt-ins` (same query and
/// default window): the opt-in history, devices registered, opted in and opted out per UTC day and
/// app version.
struct EventsAPI: Sendable {
    let configuration: Configuration
    let analytics: any AnalyticsStore
    let clock: any Clock
    let logger: Logger

    static let prefix = "/api/v1/apps/"
    /// 0001-01-01 to 9999-12-31 (UTC): outside this, day arithmetic on the window would overflow.
    static let seconds: ClosedRange<Int64> = -62_135_596_800...253_402_300_799

    func handle(path: String, query: [String: String], authorization: String?) -> HTTPResponse {
        let rest = path.dropFirst(Self.prefix.count)
        guard let resource = ["/events", "/opt-ins"].first(where: rest.hasSuffix) else { return .json(["error": "not found"], status: 404) }
        let code = String(rest.dropLast(resource.count))
        guard let app = configuration.app(code: code) else { return .json(["error": "application not found"], status: 404) }
        guard TokenAuthenticator.accepts(TokenAuthenticator.presented(authorization: authorization), for: app) else {
            return .json(["error": "access denied: send Authorization: Token <api_token> of this application"], status: 403)
        }
        let now = clock.now()
        guard let to = query["to"].map({ Int64($0) }) ?? now, Self.seconds.contains(to) else {
            return .json(["error": "to must be unix seconds between years 1 and 9999"], status: 400)
        }
        guard let from = query["from"].map({ Int64($0) }) ?? to - 7 * 86_400, Self.seconds.contains(from) else {
            return .json(["error": "from must be unix seconds between years 1 and 9999"], status: 400)
        }
        guard from < to else { return .json(["error": "from must be before to"], status: 400) }
        do {
            return .json(resource == "/events" ? try events(app: code, from: from, to: to) : try optIns(app: code, from: from, to: to))
        } catch {
            return RequestFailure(error, route: String(resource.dropFirst()), logger: logger).json
        }
    }

    /// The opt-in history of `[from, to)`: one row per UTC day and app version.
    func optIns(app: String, from: Int64, to: Int64) throws -> JSON {
        [
            "application": .string(app), "from": .int(from), "to": .int(to),
            "days": .array(try analytics.optIns(app: app, from: from, to: to).map {
                [
                    "day": .string(String(TagDate.format($0.day).prefix(10))), "app_version": $0.appVersion.map(JSON.string) ?? .null,
                    "registered": .int(Int64($0.registered)), "opted_in": .int(Int64($0.optedIn)), "opted_out": .int(Int64($0.optedOut)),
                ]
            }),
        ]
    }

    func events(app code: String, from: Int64, to: Int64) throws -> JSON {
        let stats = try analytics.eventStatistics(app: code, from: from, to: to)
        var sessions: [String: JSON] = ["count": .int(Int64(stats.sessions))]
        if let average = stats.averageSessionSeconds { sessions["average_duration_seconds"] = .double(average) }
        if let idle = stats.averageIdleSeconds { sessions["average_idle_seconds"] = .double(idle) }
        return [
            "application": .string(code), "from": .int(from), "to": .int(to),
            "events": .array(stats.events.map {
                ["name": .string($0.name), "count": .int(Int64($0.count)), "devices": .int(Int64($0.devices))]
            }),
            "screens": .array(stats.screens.map { ["screen_name": .string($0.name), "count": .int(Int64($0.count))] }),
            "sessions": .object(sessions),
            "purchases": ["count": .int(Int64(stats.purchases)), "revenue": .object(stats.revenue.mapValues(JSON.double))],
            "days": .array(stats.days.map {
                ["day": .string($0.day), "events": .int(Int64($0.events)), "devices": .int(Int64($0.devices))]
            }),
        ]
    }
}
