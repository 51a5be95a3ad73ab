import Core

/// The tag registry: `listTags`, `addTag` and `deleteTag`. Herald keeps every tag per application,
/// so the application is the one named by `application`, or else the one the token belongs to.
extension RemoteAPI {
    /// The application a registry call works on: `application` when given, else the only application
    /// whose token was presented (Pushwoosh's shapes carry only `auth`).
    func tokenApp(_ request: DeviceRequest, authorization: String?) throws -> AppConfiguration {
        if let value = request["application"], value != .null { return try authenticatedApp(request, authorization: authorization) }
        let presented = TokenAuthenticator.presented(auth: request["auth"]?.stringValue, authorization: authorization)
        let mine = configuration.apps.filter { TokenAuthenticator.accepts(presented, for: $0) }
        guard let only = mine.first else { throw AccessDenied() }
        guard mine.count == 1 else { throw ArgumentError("application is required: the token belongs to several applications") }
        return only
    }

    /// `{"tags": [{"name", "type", "isApplicationSpecific"}]}`, sorted by name.
    func listTags(app: AppConfiguration) throws -> JSON {
        let types = try campaigns.tagTypes(app: app.code)
        return ["tags": .array(types.keys.sorted().map { name in
            ["name": .string(name), "type": .int(Int64(types[name]!.rawValue)), "isApplicationSpecific": true]
        })]
    }

    /// `tag: {"name", "type", "application_specific", "user_specific"}`. Adding a tag that exists with
    /// the same type succeeds and changes nothing; with another type it is refused.
    func addTag(app: AppConfiguration, request: DeviceRequest) throws -> JSON {
        let tag = try Self.tag(request)
        let name = try tag.requiredString("name", maxLength: 128)
        guard let raw = tag["type"], raw != .null else { throw ArgumentError("tag.type is required") }
        guard let code = raw.lenientDouble, let type = TagType(rawValue: Int(code)), Double(type.rawValue) == code else {
            throw ArgumentError("tag.type must be 1 (integer), 2 (string), 3 (list), 4 (date), 5 (boolean), 6 (decimal) or 7 (version)")
        }
        // Herald's tags always belong to one application and live on devices; both flags are accepted
        // as booleans and change nothing (documented in the README).
        for flag in ["application_specific", "user_specific"] {
            _ = try tag.optionalBool(flag)
        }
        if let existing = try devices.addTag(app: app.code, name: name, type: type, now: clock.now()), existing != type {
            throw ArgumentError("tag \(name) already exists as \(existing.article) \(existing.name) tag")
        }
        logger.info("tag added", ["app": app.code, "tag": name])
        return ["result": true]
    }

    /// `tag: {"name"}`: the tag and all its values are removed. Tags declared in the configuration
    /// (`apps[].tags`) are refused: they would be declared again at the next start.
    func deleteTag(app: AppConfiguration, request: DeviceRequest) throws -> JSON {
        let name = try Self.tag(request).requiredString("name", maxLength: 128)
        guard app.tagTypes[name] == nil else {
            throw ArgumentError("tag \(name) is declared in the configuration (apps[].tags); remove it there")
        }
        guard try devices.deleteTag(app: app.code, name: name) else { throw ArgumentError("tag \(name) not found") }
        logger.info("tag deleted", ["app": app.code, "tag": name])
        return ["result": true]
    }

    /// The request's `tag` object.
    static func tag(_ request: DeviceRequest) throws(ArgumentError) -> DeviceRequest {
        guard let tag = try request.optionalObject("tag") else { throw ArgumentError("tag is required") }
        return DeviceRequest(tag, prefix: "tag.")
    }
}
