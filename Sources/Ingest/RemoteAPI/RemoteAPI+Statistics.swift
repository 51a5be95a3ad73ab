import Core

/// `getMsgStats`, `getAppStats` and `getResults`: Pushwoosh's scheduled statistics requests,
/// answered from the delivery rows, the SDK reports and the device rows (see `StatisticsRequest`).
extension RemoteAPI {
    static let messageActions = ["send", "delivery", "open"]
    static let applicationActions = ["open", "install", "register", "unregister"]

    /// `getAppStats`: `datefrom` and `dateto` as `YYYY-MM-DD HH:mm:ss` (or `YYYY-MM-DD [HH:mm]`), UTC.
    func applicationStatisticsRequest(app: AppConfiguration, request: DeviceRequest) throws -> JSON {
        func date(_ field: String) throws -> Int64 {
            let text = try request.requiredString(field, maxLength: 32)
            guard let seconds = TagDate.parse(text) else { throw ArgumentError("\(field) must be \"YYYY-MM-DD HH:mm:ss\", found \"\(text)\"") }
            return seconds
        }
        let from = try date("datefrom"), to = try date("dateto")
        guard from < to else { throw ArgumentError("dateto must be later than datefrom") }
        return ["request_id": .string(StatisticsRequest(.application(app.code, from: from, to: to)).id)]
    }

    /// `getResults`: the results of a request id from getMsgStats or getAppStats, computed now.
    func results(request: DeviceRequest, authorization: String?) throws -> JSON {
        let id = try request.requiredString("request_id", maxLength: 512)
        guard let statistics = StatisticsRequest(id: id) else { throw ArgumentError("request_id \(id.prefix(64)) not found") }
        let presented = TokenAuthenticator.presented(auth: request["auth"]?.stringValue, authorization: authorization)
        switch statistics.subject {
        case .message(let code):
            // Same refusal for an unknown message and a foreign token, as for the message's other methods.
            guard let status = try campaigns.messageStatus(app: nil, code: code), let app = configuration.app(code: status.app),
                TokenAuthenticator.accepts(presented, for: app) else { throw ArgumentError("request_id \(id.prefix(64)) not found") }
            let activity = try campaigns.messageActivity(code: code)
            let span = (activity.map(\.minute).max() ?? 0) - (activity.map(\.minute).min() ?? 0)
            let formatter = StatisticsFormatter(period: span)
            return [
                "formatter": .string(formatter.rawValue),
                "rows": formatter.rows(activity, actions: Self.messageActions),
                // Herald does not attribute in-app events to messages: `events` stays empty.
                "conversion": ["send": .int(Int64(status.sent)), "delivery": .int(Int64(status.delivered)),
                               "open": .int(Int64(status.opened)), "events": []],
            ]
        case .application(let code, let from, let to):
            guard let app = configuration.app(code: code) else { throw ArgumentError("request_id \(id.prefix(64)) not found") }
            guard TokenAuthenticator.accepts(presented, for: app) else { throw AccessDenied() }
            let formatter = StatisticsFormatter(period: to - from)
            let activity = try analytics.applicationActivity(app: code, from: from, to: to)
            return ["formatter": .string(formatter.rawValue), "rows": formatter.rows(activity, actions: Self.applicationActions)]
        }
    }
}
