import Core

/// `createTargetedMessage`: one message whose audience is a `devices_filter` expression, with the
/// notification's fields at the top level of the request.
extension RemoteAPI {
    /// createMessage's targeting fields, which devices_filter replaces.
    static let untargetedFields = ["notifications", "conditions", "conditions_operator", "devices", "users", "platforms", "filter"]

    func createTargetedMessage(_ request: DeviceRequest, authorization: String?) throws -> JSON {
        let text = try request.requiredString("devices_filter", maxLength: DeviceFilterParser.maximumLength * 4)
        if let value = request["devices_filter"], value.stringValue == nil {
            throw ArgumentError("devices_filter must be a string in Pushwoosh's filter language, found \(value.typeName)")
        }
        let syntax: DeviceFilterSyntax
        do {
            syntax = try DeviceFilterParser.parse(text)
        } catch {
            throw ArgumentError("devices_filter \(error)")
        }
        let presented = TokenAuthenticator.presented(auth: request["auth"]?.stringValue, authorization: authorization)
        let app = try targetedApp(syntax.applications, presented: presented)
        if let field = Self.untargetedFields.first(where: { request[$0].map { $0 != .null } ?? false }) {
            throw ArgumentError("\(field) is not a field of createTargetedMessage: devices_filter chooses the devices")
        }
        let now = clock.now()
        let tagTypes = try campaigns.tagTypes(app: app.code)
        var spec = try NotificationParser(fields: request.fields, path: nil, tagTypes: tagTypes, now: now).parse()
        if let code = spec.richMedia { spec.richMediaLink = try richMediaLink(app: app.code, code: code, field: "rich_media") }
        do {
            spec.filter = try syntax.resolve(tagType: { tagTypes[$0] }, now: now)
        } catch {
            throw ArgumentError("devices_filter \(error)")
        }
        let transaction = try request.optionalString("transactionId", maxLength: 128).flatMap { $0.isEmpty ? nil : $0 }
        let codes = try campaigns.createMessages(app: app.code, [NewMessage(spec: spec, transactionID: transaction)], now: now)
        logger.info("targeted message created", ["app": app.code, "message.code": codes.joined(separator: ",")])
        onCreated()
        return ["messageCode": .string(codes.first ?? "")]
    }

    /// The application a targeted message goes to: the one the filter names (every application it
    /// names must accept the token), or, when it names none, the one application of the token. A
    /// Herald message belongs to one application, so a filter over several is refused.
    func targetedApp(_ named: [String], presented: String?) throws -> AppConfiguration {
        guard !named.isEmpty else {
            let mine = configuration.apps.filter { TokenAuthenticator.accepts(presented, for: $0) }
            guard let only = mine.first else { throw AccessDenied() }
            guard mine.count == 1 else {
                throw ArgumentError("devices_filter names no application and the token belongs to several; add A(\"APP-CODE\")")
            }
            return only
        }
        var apps: [AppConfiguration] = []
        for code in named {
            guard let app = configuration.app(code: code) else { throw ArgumentError("devices_filter: application \(code.prefix(64)) not found") }
            guard TokenAuthenticator.accepts(presented, for: app) else { throw AccessDenied() }
            apps.append(app)
        }
        guard apps.count == 1 else {
            throw ArgumentError("devices_filter names applications \(named.joined(separator: ", ")); a message goes to one application: "
                                + "send one createTargetedMessage per application")
        }
        return apps[0]
    }
}
