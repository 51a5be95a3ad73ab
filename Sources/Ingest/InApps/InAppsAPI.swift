import Core

/// In-app messages of an application, with `Authorization: Token <api_token>`:
/// `PUT /api/v1/apps/<app>/in-apps/<code>` creates or replaces one (a JSON body naming its rich
/// media page, presentation and triggers), `GET …/in-apps` lists them with their statistics (shown
/// from triggerInAppAction, actions from richMediaAction), `GET …/in-apps/<code>` shows one, and
/// `DELETE …/in-apps/<code>` removes it.
struct InAppsAPI: AppResourceAPI {
    let configuration: Configuration
    let store: any RichMediaStore
    let links: RichMediaLinks
    let clock: any Clock
    let logger: Logger

    static let collection = "in-apps"
    static let listKey = "inApps"
    static let noun = "in-app"
    static let maxTriggers = 100

    func list(app: String) throws -> [JSON] { try store.inApps(app: app).map(json) }

    func show(app: String, code: String) throws -> JSON? { try store.inApps(app: app).first { $0.spec.code == code }.map(json) }

    func prepareStore(app: String, code: String, body: [UInt8]) -> Result<@Sendable () throws -> JSON, AppResourceRequest.Refusal> {
        guard links.publicURL != nil else { return .failure(AppResourceRequest.Refusal(409, RichMediaLinks.missingPublicURL)) }
        let spec: InApp.Spec
        do {
            spec = try Self.spec(code: code, body: body)
        } catch {
            return .failure(AppResourceRequest.Refusal(400, "in-app \(code) refused: \(error.message)"))
        }
        return .success({ [self] in json(try store.putInApp(app: app, spec, now: clock.now())) })
    }

    func delete(app: String, code: String) throws -> Bool { try store.deleteInApp(app: app, code: code) }

    /// The in-app a PUT body describes:
    /// `{"rich_media", "layout", "close_button_type", "priority", "required", "triggers": [{"event", "conditions"}]}`.
    /// Read strictly: an unknown key is refused (a misspelt `conditions` would otherwise make a
    /// trigger unconditional), and so is a condition that could never match. A trigger without
    /// `conditions` matches any attributes.
    static func spec(code: String, body: [UInt8]) throws(ArgumentError) -> InApp.Spec {
        var holdsNUL = false
        guard let json = try? JSON.parse(body, holdsNUL: &holdsNUL), var fields = try? ConfigReader(json, path: "") else {
            throw ArgumentError("the body must be a JSON object")
        }
        if holdsNUL, let nul = json.nulCharacter { throw ArgumentError(nul.description) }
        guard let page = fields.value("rich_media")?.stringValue, RichMediaLinks.isValidCode(page) else {
            throw ArgumentError("rich_media is required: the code of an uploaded page (\(RichMediaLinks.codeRule))")
        }
        var spec = InApp.Spec(code: code, richMedia: page)
        if let layout = fields.value("layout") {
            guard let name = layout.stringValue, let value = InApp.Layout(rawValue: name) else {
                throw ArgumentError("layout must be one of \(InApp.Layout.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            spec.layout = value
        }
        for (key, keyPath, range) in [("close_button_type", \InApp.Spec.closeButtonType, 0...16), ("priority", \InApp.Spec.priority, -1000...1000)] {
            guard let value = fields.value(key) else { continue }
            guard let number = value.lenientInt, range.contains(Int(number)) else {
                throw ArgumentError("\(key) must be an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            spec[keyPath: keyPath] = Int(number)
        }
        if let required = fields.value("required") {
            guard let flag = required.lenientBool else { throw ArgumentError("required must be a boolean") }
            spec.required = flag
        }
        if let triggers = fields.value("triggers") {
            guard let items = triggers.arrayValue, items.count <= maxTriggers else {
                throw ArgumentError("triggers must be an array of at most \(maxTriggers) {\"event\", \"conditions\"} objects")
            }
            for (index, item) in items.enumerated() {
                spec.triggers.append(try trigger(item, at: "triggers[\(index)]"))
            }
        }
        try refuseUnknownKeys(fields, known: "an in-app has rich_media, layout, close_button_type, priority, required and triggers")
        return spec
    }

    /// One `{"event", "conditions"}` of `triggers`, `path` naming it in errors.
    static func trigger(_ item: JSON, at path: String) throws(ArgumentError) -> InAppTrigger {
        guard var fields = try? ConfigReader(item, path: path) else { throw ArgumentError("\(path) must be an {\"event\", \"conditions\"} object") }
        guard let event = fields.value("event")?.stringValue, (1...256).contains(event.utf8.count) else {
            throw ArgumentError("\(path).event must be an event name of 1 to 256 bytes")
        }
        var conditions: [AttributeCondition] = []
        if let given = fields.value("conditions") {
            guard let items = given.arrayValue else { throw ArgumentError("\(path).conditions must be an array of [attribute, operator, operand]") }
            for (position, condition) in items.enumerated() {
                do {
                    conditions.append(try AttributeCondition(checking: condition))
                } catch {
                    throw ArgumentError("\(path).conditions[\(position)] \(error.message)")
                }
            }
        }
        try refuseUnknownKeys(fields, known: "a trigger has event and conditions")
        return InAppTrigger(event: event, conditions: conditions)
    }

    static func refuseUnknownKeys(_ fields: ConfigReader, known: String) throws(ArgumentError) {
        do {
            try fields.finish()
        } catch {
            throw ArgumentError("unknown key \(error.key.prefix(100)); \(known)")
        }
    }

    func json(_ inApp: InApp) -> JSON {
        [
            "code": .string(inApp.spec.code), "rich_media": .string(inApp.spec.richMedia), "layout": .string(inApp.spec.layout.rawValue),
            "close_button_type": .int(Int64(inApp.spec.closeButtonType)), "priority": .int(Int64(inApp.spec.priority)),
            "required": .bool(inApp.spec.required), "triggers": .array(inApp.spec.triggers.map(\.json)),
            "url": links.url(app: inApp.app, code: inApp.page.code).map(JSON.string) ?? .null, "version": .int(inApp.page.version),
            "statistics": ["shown": .int(Int64(inApp.shown)), "actions": .int(Int64(inApp.actions))],
            "created": .int(inApp.createdAt), "updated": .int(inApp.updatedAt),
        ]
    }
}
