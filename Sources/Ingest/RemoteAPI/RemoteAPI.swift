import Core
import HTTPServer

/// The Pushwoosh Remote API (server to server): createMessage, createTargetedMessage, deleteMessage,
/// getMessageDetails, the statistics requests getMsgStats, getAppStats and getResults, the tag
/// registry (listTags, addTag, deleteTag), Live Activities (startLiveActivity, updateLiveActivity),
/// and the message funnel at `GET /api/v1/messages/<code>`. Calls authenticate with `request.auth` or
/// `Authorization: Token <api_token>` of the application they name.
struct RemoteAPI: Sendable {
    let configuration: Configuration
    let campaigns: any CampaignStore
    let devices: any DeviceStore
    let analytics: any AnalyticsStore
    let richMedia: any RichMediaStore
    let links: RichMediaLinks
    let clock: any Clock
    let logger: Logger
    let onCreated: @Sendable () -> Void

    /// The names of the methods `registry` answers.
    static let methods = Set(registry.keys)
    static let maximumNotifications = 1000

    /// An authentication failure: HTTP 403 with the envelope.
    struct AccessDenied: Error {}

    /// The application named by `request.application`, once the token matches it.
    func authenticatedApp(_ request: DeviceRequest, authorization: String?) throws -> AppConfiguration {
        let code = try request.application()
        guard let app = configuration.app(code: code) else { throw ArgumentError("application \(code.prefix(64)) not found") }
        guard TokenAuthenticator.accepts(TokenAuthenticator.presented(auth: request["auth"]?.stringValue, authorization: authorization), for: app)
        else { throw AccessDenied() }
        return app
    }

    /// The application of message `code` when the request names none (Pushwoosh's documented shape of
    /// deleteMessage and getMessageDetails), once the token matches it. An unknown code and a foreign
    /// token get the same answer, so codes cannot be probed.
    func appOfMessage(_ code: String, request: DeviceRequest, authorization: String?) throws -> AppConfiguration {
        let presented = TokenAuthenticator.presented(auth: request["auth"]?.stringValue, authorization: authorization)
        guard let status = try campaigns.messageStatus(app: nil, code: code), let app = configuration.app(code: status.app),
              TokenAuthenticator.accepts(presented, for: app) else { throw ArgumentError("message \(code.prefix(64)) not found") }
        return app
    }

    /// Answers a call. The token comes first: one that is no application's is access denied before
    /// any field is read, so a caller without credentials learns nothing of the request's shape.
    func handle(method: String, request: DeviceRequest, authorization: String?) throws -> JSON {
        let presented = TokenAuthenticator.presented(auth: request["auth"]?.stringValue, authorization: authorization)
        guard TokenAuthenticator.isKnown(presented, in: configuration) else { throw AccessDenied() }
        guard let answer = Self.registry[method]?.answer else { throw ArgumentError("unknown method \(method.prefix(64))") }
        return try answer(self, request, authorization)
    }

    /// The application and code of the message a call is about: the application is the one named,
    /// or the message's own.
    func message(_ request: DeviceRequest, authorization: String?) throws -> (app: AppConfiguration, code: String) {
        if request["application"] == nil || request["application"] == .null {
            let code = try request.requiredString("message", maxLength: 64)
            return (try appOfMessage(code, request: request, authorization: authorization), code)
        }
        let app = try authenticatedApp(request, authorization: authorization)
        return (app, try request.requiredString("message", maxLength: 64))
    }

    func deleteMessage(_ request: DeviceRequest, authorization: String?) throws -> JSON {
        let (app, code) = try message(request, authorization: authorization)
        guard try campaigns.deleteMessage(app: app.code, code: code, now: clock.now()) else {
            throw ArgumentError("message \(code) not found, or already finished")
        }
        logger.info("message deleted", ["message.code": code])
        return .null
    }

    func messageDetails(_ request: DeviceRequest, authorization: String?) throws -> JSON {
        let (app, code) = try message(request, authorization: authorization)
        guard let status = try campaigns.messageStatus(app: app.code, code: code) else {
            throw ArgumentError("message \(code) not found")
        }
        return ["message": Self.details(status)]
    }

    func messageStatisticsRequest(_ request: DeviceRequest, authorization: String?) throws -> JSON {
        let (app, code) = try message(request, authorization: authorization)
        guard try campaigns.messageStatus(app: app.code, code: code) != nil else { throw ArgumentError("message \(code) not found") }
        return ["request_id": .string(StatisticsRequest(.message(code)).id)]
    }

    /// The request's `notifications`, each an object, with its path (`notifications[2]`).
    func notifications(_ request: DeviceRequest) throws -> [(path: String, fields: [String: JSON])] {
        guard let value = request["notifications"], value != .null else { throw ArgumentError("notifications is required") }
        guard let items = value.arrayValue, !items.isEmpty else { throw ArgumentError("notifications must be a non-empty array") }
        guard items.count <= Self.maximumNotifications else {
            throw ArgumentError("notifications has \(items.count) entries; at most \(Self.maximumNotifications) per call")
        }
        return try items.enumerated().map { index, item in
            let path = "notifications[\(index)]"
            guard let fields = item.objectValue else { throw ArgumentError("\(path) must be an object") }
            return (path, fields)
        }
    }

    func createMessage(app: AppConfiguration, request: DeviceRequest) throws -> JSON {
        let items = try notifications(request)
        let requestTransaction = try request.optionalString("transactionId", maxLength: 128)
        let tagTypes = try campaigns.tagTypes(app: app.code)
        let now = clock.now()
        var messages: [NewMessage] = []
        for (index, (path, fields)) in items.enumerated() {
            var spec = try NotificationParser(fields: fields, path: path, tagTypes: tagTypes, now: now).parse()
            if let code = spec.richMedia { spec.richMediaLink = try richMediaLink(app: app.code, code: code, field: "\(path).rich_media") }
            var transaction = try fields["transactionId"].flatMap { value throws(ArgumentError) -> String? in
                guard let text = value.lenientString, text.utf8.count <= 128 else {
                    throw ArgumentError("\(path).transactionId must be a string of at most 128 bytes")
                }
                return text.isEmpty ? nil : text
            }
            if transaction == nil, let requestTransaction { transaction = items.count == 1 ? requestTransaction : "\(requestTransaction)#\(index)" }
            messages.append(NewMessage(spec: spec, transactionID: transaction))
        }
        return try create(messages, app: app, now: now)
    }

    /// Commits the messages, wakes the dispatcher and answers with their codes (`Messages`), and
    /// the `devices` entries the application does not know (`UnknownDevices`).
    func create(_ messages: [NewMessage], app: AppConfiguration, now: Int64) throws -> JSON {
        // As Pushwoosh does: `devices` entries the application does not know, per message (read
        // before the commit, so that the reply after it cannot fail).
        let missing = try messages.map { message in try message.spec.devices.map { try campaigns.unknownDevices(app: app.code, $0) } ?? [] }
        let codes = try campaigns.createMessages(app: app.code, messages, now: now)
        logger.info("messages created", ["app": app.code, "message.codes": codes.joined(separator: ",")])
        onCreated()
        var unknown: [String: JSON] = [:]
        for (code, entries) in zip(codes, missing) where !entries.isEmpty { unknown[code] = .array(entries.map(JSON.string)) }
        var reply: [String: JSON] = ["Messages": .array(codes.map(JSON.string))]
        if !unknown.isEmpty { reply["UnknownDevices"] = .object(unknown) }
        return .object(reply)
    }

    /// The `rm` of a message's `rich_media`: the hosted page with that code (which needs
    /// `http.public_url`), or a zip's own http(s) URL given instead of a code (version "0").
    func richMediaLink(app: String, code: String, field: String) throws -> RichMediaLink {
        let lowered = code.lowercased()
        if lowered.hasPrefix("https://") || lowered.hasPrefix("http://") { return RichMediaLink(url: code, ts: "0") }
        guard links.publicURL != nil else { throw ArgumentError("\(field): \(RichMediaLinks.missingPublicURL)") }
        guard RichMediaLinks.isValidCode(code), let page = try richMedia.page(app: app, code: code), let link = links.link(page) else {
            throw ArgumentError("\(field): rich media \(code.prefix(64)) not found; upload it with PUT /api/v1/apps/\(app)/rich-media/<code>")
        }
        return link
    }

    /// `GET /api/v1/messages/<code>` with `Authorization: Token <api_token>`.
    func funnel(code: String, authorization: String?) -> HTTPResponse {
        do {
            guard let status = try campaigns.messageStatus(app: nil, code: code),
                let app = configuration.app(code: status.app),
                TokenAuthenticator.accepts(TokenAuthenticator.presented(authorization: authorization), for: app)
            else {
                // Same answer for "no such message" and "not yours", so codes cannot be probed.
                return .json(["error": "message not found"], status: 404)
            }
            return .json(Self.funnel(status))
        } catch {
            return RequestFailure(error, route: "message funnel", logger: logger).json
        }
    }

    static func funnel(_ status: MessageStatus) -> JSON {
        [
            "code": .string(status.code), "application": .string(status.app), "status": .string(status.status.rawValue),
            "targeted": .int(Int64(status.targeted)), "sent": .int(Int64(status.sent)), "failed": .int(Int64(status.failed)),
            "throttled": .int(Int64(status.throttled)), "retrying": .int(Int64(status.retrying)),
            "ambiguous": .int(Int64(status.ambiguous)), "delivered": .int(Int64(status.delivered)),
            "opened": .int(Int64(status.opened)), "errors": .object(status.errors.mapValues { JSON.int(Int64($0)) }),
        ]
    }

    static func details(_ status: MessageStatus) -> JSON {
        var details = funnel(status).objectValue ?? [:]
        details["hash"] = .string(status.hash)
        details["send_date"] = .string(TagDate.format(status.spec.schedule.sendAt))
        // What the request said, next to the UTC time it came to.
        if let given = status.spec.schedule.givenSendDate { details["send_date_given"] = .string(given) }
        if let zone = status.spec.schedule.givenTimezone { details["timezone"] = .string(zone) }
        details["ignore_user_timezone"] = .bool(!status.spec.schedule.perDeviceTimezone)
        details["created"] = .string(TagDate.format(status.createdAt))
        details["content"] = .object(status.spec.content.mapValues(JSON.string))
        if let title = status.spec.title { details["title"] = .object(title.mapValues(JSON.string)) }
        if let platforms = status.spec.platforms { details["platforms"] = .array(platforms.map { .int(Int64($0)) }) }
        if let rate = status.spec.sendRate { details["send_rate"] = .int(Int64(rate)) }
        return .object(details)
    }
}
