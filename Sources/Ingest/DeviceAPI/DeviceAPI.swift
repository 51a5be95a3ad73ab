import Core
import WebPush

/// The Pushwoosh Device API: every method the iOS and Android SDKs call on `/json/1.3/<method>`.
/// Registry writes are committed before the reply; reports (events, opens, deliveries) are stored
/// durably before the reply. The SDKs send no credentials, only the application code and the
/// device's hwid; a call that names a user and no device (`isUserForm`) is the Remote API's and needs
/// the application's api_token.
struct DeviceAPI: Sendable {
    let configuration: Configuration
    let store: any DeviceStore
    let richMedia: any RichMediaStore
    let inbox: any InboxStore
    let links: RichMediaLinks
    let applicationServerKeys: ApplicationServerKeys
    let clock: any Clock

    /// Methods this API answers (others may belong to the Remote API).
    static let methods: Set<String> = [
        "registerDevice", "unregisterDevice", "deleteDevice", "applicationOpen", "setTags", "getTags", "setBadge", "registerUser",
        "mergeUser", "postEvent", "pushStat", "messageDeliveryEvent", "getInApps", "setPurchase", "triggerInAppAction",
        "richMediaAction", "setActivityToken", "setActivityPushToStartToken", "createTestDevice", "registerEmail",
        "registerEmailUser", "setEmailTags", "getInboxMessages", "inboxStatus", "getConfig", "checkDevice",
    ]

    /// The part of a call that touches the store, run after validation (on the database writer for writes).
    typealias Work = @Sendable () throws -> JSON

    /// Whether a call reads or changes a user's data without naming a device (no `hwid`): setTags and
    /// getTags with `userId`, and mergeUser. The SDKs always send the device's hwid; a server sends
    /// this form, which is the Remote API's.
    static func isUserForm(method: String, request: DeviceRequest) -> Bool {
        func names(_ field: String) -> Bool { request[field].map { $0 != .null && $0 != "" } ?? false }
        switch method {
        case "setTags", "getTags": return names("userId") && !names("hwid")
        case "mergeUser": return !names("hwid")
        default: return false
        }
    }

    /// A user-form call's credentials, checked before any of its fields: an api_token (`auth` or
    /// `Authorization: Token`) of the application it names, else access denied (HTTP 403).
    func authenticateUserForm(_ request: DeviceRequest, authorization: String?) throws {
        let presented = TokenAuthenticator.presented(auth: request["auth"]?.stringValue, authorization: authorization)
        guard TokenAuthenticator.isKnown(presented, in: configuration) else { throw RemoteAPI.AccessDenied() }
        guard let app = configuration.app(code: try request.application()), TokenAuthenticator.accepts(presented, for: app) else {
            throw RemoteAPI.AccessDenied()
        }
    }

    /// Validates a call and returns its store work. Credentials and argument errors are thrown here,
    /// before any work.
    func prepare(method: String, request: DeviceRequest, authorization: String?) throws -> Work {
        if Self.isUserForm(method: method, request: request) { try authenticateUserForm(request, authorization: authorization) }
        let app = try request.application()
        guard store.hasApplication(app) else { throw StoreError.unknownApplication(app) }
        let store = self.store, clock = self.clock
        switch method {
        case "registerDevice", "createTestDevice":
            let attributes = try request.attributes()
            guard let platform = attributes.platform else { throw ArgumentError("device_type is required") }
            let pushToken = try request.requiredString("push_token")
            let registration = DeviceRegistration(
                app: app, hwid: try request.hwid(), pushToken: pushToken, gateway: try gateway(request),
                webKeys: try webKeys(request, app: app, platform: platform, endpoint: pushToken), attributes: attributes,
                tags: try request.tagUpdates(required: false))
            return { try store.registerDevice(registration, now: clock.now()); return .null }
        case "unregisterDevice":
            let hwid = try request.hwid()
            return { try store.unregisterDevice(app: app, hwid: hwid, now: clock.now()); return .null }
        case "deleteDevice":
            // The Web SDK's removeAllDeviceData. Deleting a device Herald does not have succeeds too:
            // the SDK's retry of a call whose reply it missed finds it gone.
            let hwid = try request.hwid()
            return { try store.deleteDevice(app: app, hwid: hwid, now: clock.now()); return .null }
        case "applicationOpen":
            let hwid = try request.hwid(), attributes = try request.attributes()
            return { try store.applicationOpen(app: app, hwid: hwid, attributes: attributes, now: clock.now()); return .null }
        case "setTags":
            let updates = try request.tagUpdates(required: true)
            if Self.isUserForm(method: method, request: request), let userID = try request.optionalString("userId", maxLength: 256) {
                // From a server: every device of the user (Herald keeps tags per device only).
                return {
                    guard try store.setUserTags(app: app, userID: userID, updates: updates, now: clock.now()) > 0 else {
                        throw ArgumentError("userId \(userID.prefix(64)) has no device in application \(app)")
                    }
                    return .null
                }
            }
            let hwid = try request.hwid(), attributes = try request.attributes()
            return { try store.setTags(app: app, hwid: hwid, attributes: attributes, updates: updates, now: clock.now()); return .null }
        case "getTags":
            let hwid = try request.optionalString("hwid", maxLength: 256)
            let userID = try request.optionalString("userId", maxLength: 256)
            guard hwid != nil || userID != nil else { throw ArgumentError("hwid or userId is required") }
            return {
                Self.tagsReply(try store.getTags(app: app, hwid: hwid, userID: hwid == nil ? userID : nil))
            }
        case "setBadge":
            let badge = try request.requiredInt("badge")
            guard badge >= 0 else { throw ArgumentError("badge must not be negative") }
            let hwid = try request.hwid(), attributes = try request.attributes()
            return { try store.setBadge(app: app, hwid: hwid, attributes: attributes, badge: badge, now: clock.now()); return .null }
        case "registerUser":
            let userID = try request.requiredString("userId", maxLength: 256)
            let hwid = try request.hwid(), attributes = try request.attributes()
            return { try store.registerUser(app: app, hwid: hwid, attributes: attributes, userID: userID, now: clock.now()); return .null }
        case "mergeUser":
            let old = try request.requiredString("oldUserId", maxLength: 256)
            let new = try request.requiredString("newUserId", maxLength: 256)
            let merge = try request.optionalBool("merge") ?? true
            return { try store.mergeUser(app: app, oldUserID: old, newUserID: new, merge: merge, now: clock.now()); return .null }
        case "postEvent":
            let name = try request.requiredString("event", maxLength: 256)
            let attributes = try request.optionalObject("attributes") ?? [:]
            return try record(.event, app: app, request: request, name: name, hash: attributes["msgHash"]?.lenientString,
                              reply: try triggeredInApp(app: app, event: name, attributes: attributes))
        case "pushStat":
            return try record(.pushStat, app: app, request: request, name: nil, hash: try request.optionalString("hash", maxLength: 256))
        case "messageDeliveryEvent":
            return try record(.delivery, app: app, request: request, name: nil, hash: try request.optionalString("hash", maxLength: 256))
        case "setPurchase":
            _ = try request.requiredString("productIdentifier", maxLength: 256)
            return try record(.purchase, app: app, request: request, name: "setPurchase", hash: nil)
        case "triggerInAppAction":
            let code = try request.optionalString("code", maxLength: 256)
            let shown = try request.optionalString("action", maxLength: 64).map { $0 == "show" } ?? true
            return try record(.action, app: app, request: request, name: method, hash: nil,
                              counting: shown ? code.flatMap(nonEmpty).map { .shown(inApp: $0) } : nil)
        case "richMediaAction":
            let inApp = try request.optionalString("inapp_code", maxLength: 256).flatMap(nonEmpty)
            let page = try request.optionalString("rich_media_code", maxLength: 256).flatMap(nonEmpty)
            return try record(.action, app: app, request: request, name: method, hash: nil,
                              counting: inApp == nil && page == nil ? nil : .action(inApp: inApp, richMedia: page))
        case "inboxStatus":
            let owner = try inboxOwner(app: app, request: request)
            let code = try request.requiredString("inbox_code", maxLength: 64)
            guard let order = Int64(code), order > 0 else {
                throw ArgumentError("inbox_code must be the \"order\" of a message from getInboxMessages, found \"\(code.prefix(64))\"")
            }
            let number = try request.requiredInt("status")
            guard let status = InboxStatus(rawValue: Int(number)), status != .delivered else {
                throw ArgumentError("status must be 2 (read), 3 (opened) or 4 (deleted), found \(number)")
            }
            let report = try record(.action, app: app, request: request, name: method, hash: nil)
            return { [inbox] in
                guard try inbox.setInboxStatus(owner, order: order, status: status, now: clock.now()) else {
                    throw ArgumentError("inbox_code \(order) is no message of this device's inbox (unknown, or expired)")
                }
                return try report()
            }
        case "setActivityToken":
            // Kept as a report too, as before. The SDK sends `activity_id` "" when it has none (older
            // SDKs omit it): such a token names no activity and is only reported. No token is the
            // SDK's stopLiveActivity: the device's tokens of the activity (all, without an id) end.
            let hwid = try request.hwid(), attributes = try request.attributes()
            let activityID = try request.optionalString("activity_id", maxLength: MessageSpec.LiveActivity.maximumIDLength)
            let token = try request.optionalString("activity_token", maxLength: 1024)
            let report = try record(.action, app: app, request: request, name: method, hash: nil)
            return {
                if let token, let activityID {
                    try store.setActivityToken(app: app, hwid: hwid, attributes: attributes, activityID: activityID, token: token,
                                               now: clock.now())
                } else if token == nil {
                    try store.deactivateActivityTokens(app: app, hwid: hwid, activityID: activityID, now: clock.now())
                }
                return try report()
            }
        case "setActivityPushToStartToken":
            let hwid = try request.hwid(), attributes = try request.attributes()
            let token = try request.requiredString("activity_push_to_start_token", maxLength: 1024)
            let report = try record(.action, app: app, request: request, name: method, hash: nil)
            return {
                try store.setActivityToken(app: app, hwid: hwid, attributes: attributes, activityID: nil, token: token, now: clock.now())
                return try report()
            }
        case "getInApps":
            _ = try request.hwid()
            return { [richMedia, links] in
                // Without http.public_url there is no address to give the SDK.
                guard links.publicURL != nil else { return ["inApps": []] }
                return ["inApps": .array(try richMedia.inApps(app: app).compactMap { inApp in
                    links.link(inApp.page).map { link in
                        [
                            "code": .string(inApp.spec.code), "url": .string(link.url), "updated": .int(inApp.page.version),
                            "closeButtonType": .int(Int64(inApp.spec.closeButtonType)),
                            "presentationStyleKey": .string(inApp.spec.layout.rawValue), "tags": [:],
                            "priority": .int(Int64(inApp.spec.priority)), "required": .bool(inApp.spec.required),
                        ]
                    }
                })]
            }
        case "getInboxMessages":
            let owner = try inboxOwner(app: app, request: request)
            let last = try request.optionalString("last_code", maxLength: 64).flatMap(nonEmpty)
            let after = try last.map { code throws(ArgumentError) in
                guard let order = Int64(code) else {
                    throw ArgumentError("last_code must be the \"next\" of an earlier reply, found \"\(code.prefix(64))\"")
                }
                return order
            }
            let count = try request.optionalInt("count") ?? 0
            guard (0...Self.maxInboxPage).contains(count) else {
                throw ArgumentError("count must be between 0 (all) and \(Self.maxInboxPage)")
            }
            return { [inbox] in
                let page = try inbox.inbox(owner, after: after, limit: Int(count), now: clock.now())
                return [
                    "messages": .array(page.entries.map { InboxReply.message($0, language: owner.language) }),
                    "next": .string(page.hasMore ? page.entries.last.map { String($0.order) } ?? "" : ""),
                    "deleted": [], "new_inbox": .int(Int64(page.unread)),
                ]
            }
        case "getConfig":
            let features = try configFeatures(app: app, request: request)
            return { ["features": .object(features)] }
        case "checkDevice":
            // The Web SDK's check on page loads: is the device known, and can it be pushed to.
            let hwid = try request.hwid()
            return {
                let device = try store.device(app: app, hwid: hwid)
                let reachable = device.map { $0.pushToken != nil && $0.subscribed } ?? false
                return ["exist": .bool(device != nil), "push_token_exist": .bool(reachable)]
            }
        case "registerEmail", "registerEmailUser", "setEmailTags":
            // Herald sends no email; the call is kept as received, keyed by the address.
            let email = try request.requiredString("email", maxLength: 320)
            let report = SDKReport(kind: .action, app: app, hwid: email, userID: try request.optionalString("userId", maxLength: 256),
                                   platform: nil, name: method, hash: nil, body: .object(request.fields), timestampUTC: nil,
                                   timestampCurrent: nil)
            return { try store.record([report], now: clock.now()); return .null }
        default:
            throw ArgumentError("unknown method \(method)")
        }
    }

    /// The application and device a getTags by hwid asks for, once it passed every check the call
    /// makes (`prepare`); nil for a getTags by userId.
    func tagsDevice(_ request: DeviceRequest, authorization: String?) throws -> (app: String, hwid: String)? {
        _ = try prepare(method: "getTags", request: request, authorization: authorization)
        guard let hwid = try request.optionalString("hwid", maxLength: 256) else { return nil }
        return (try request.application(), hwid)
    }

    /// getTags' `response`: the tags under `result`.
    static func tagsReply(_ tags: [String: TagValue]) -> JSON { ["result": .object(tags.mapValues(\.json))] }

    /// postEvent's reply: the in-app the event triggers (`{"code", "richmedia": {url, ts, tags},
    /// "required"}`, the highest priority among those whose trigger matches), or `{}`. Read here,
    /// before the report is queued, so the writer never waits for it.
    func triggeredInApp(app: String, event: String, attributes: [String: JSON]) throws -> JSON {
        guard links.publicURL != nil else { return [:] }
        let triggered = try richMedia.inApps(app: app, triggeredBy: event).first { inApp in
            inApp.spec.triggers.contains { $0.event == event && $0.matches(attributes) }
        }
        guard let triggered, let link = links.link(triggered.page) else { return [:] }
        return ["code": .string(triggered.spec.code), "richmedia": link.json, "required": .bool(triggered.spec.required)]
    }

    func nonEmpty(_ text: String) -> String? { text.isEmpty ? nil : text }

    /// getConfig's `features`: those the request names (`features`, a list of names; all when
    /// absent) among those Herald has: no `channels`, no `events`, and `vapid_key`, the key the Web
    /// SDK subscribes browsers with, for an application with `web`. Others are left out, which the
    /// SDKs read as off.
    func configFeatures(app: String, request: DeviceRequest) throws(ArgumentError) -> [String: JSON] {
        var known: [String: JSON] = ["channels": [], "events": []]
        if let key = applicationServerKeys.key(app: app) { known["vapid_key"] = .string(key) }
        guard let requested = request["features"], requested != .null else { return known }
        guard case .array(let names) = requested else {
            throw ArgumentError("features must be a list of feature names, found \(requested.typeName)")
        }
        var features: [String: JSON] = [:]
        for name in names {
            guard case .string(let name) = name else {
                throw ArgumentError("features must be a list of feature names, found an item of type \(name.typeName)")
            }
            features[name] = known[name]
        }
        return features
    }

    /// The most messages one getInboxMessages page holds (`count` 0 asks for all of them).
    static let maxInboxPage: Int64 = 1000

    /// The device an inbox call is about; an unknown device is a 210.
    func inboxOwner(app: String, request: DeviceRequest) throws -> InboxOwner {
        let hwid = try request.hwid()
        guard let owner = try inbox.inboxOwner(app: app, hwid: hwid) else {
            throw ArgumentError("hwid \"\(hwid.prefix(64))\" is no device of application \(app); register it first")
        }
        return owner
    }

    /// A browser's subscription keys (`public_key`, `auth_token`, base64 as the Web SDK sends them),
    /// required for the platforms delivered through Web Push and checked with the endpoint
    /// (`push_token`): an https URL, an uncompressed P-256 point, a 16-byte secret. An endpoint on
    /// `localhost` or a private address literal is refused too, unless the application's
    /// `web.allow_private_endpoints` is on: the workers would post to it from inside the network.
    /// Nil for other platforms, whose keys are not kept.
    func webKeys(_ request: DeviceRequest, app: String, platform: Int, endpoint: String) throws(ArgumentError) -> WebPushKeys? {
        guard Platform.usesWebPush(platform) else { return nil }
        let keys = WebPushKeys(p256dh: try request.requiredString("public_key", maxLength: 512),
                               auth: try request.requiredString("auth_token", maxLength: 512))
        do {
            _ = try WebSubscription(endpoint: endpoint, p256dh: keys.p256dh, auth: keys.auth)
        } catch {
            // WebSubscription names its own fields (`endpoint: …`); the reply names the request's.
            let fields = ["endpoint": "push_token", "p256dh": "public_key", "auth": "auth_token"]
            let parts = error.message.split(separator: ":", maxSplits: 1)
            let field = parts.count == 2 ? fields[String(parts[0])] : nil
            throw ArgumentError(field.map { "\($0):\(parts[1])" } ?? "push_token: \(error.message)")
        }
        if let host = WebSubscription.privateHost(of: endpoint), configuration.app(code: app)?.web?.allowsPrivateEndpoints != true {
            throw ArgumentError("push_token: the endpoint's host \(host.prefix(64)) is this machine or a private network, not a push service "
                                + "on the Internet (web.allow_private_endpoints accepts it)")
        }
        return keys
    }

    func gateway(_ request: DeviceRequest) throws(ArgumentError) -> String? {
        guard let gateway = try request.optionalString("gateway", maxLength: 16) else { return nil }
        guard gateway == "sandbox" || gateway == "production" else {
            throw ArgumentError("gateway must be \"sandbox\" or \"production\"")
        }
        return gateway
    }

    /// The largest report Herald keeps (its fields as JSON): larger ones are refused with 210, so
    /// that stored reports stay small (the body limit alone would allow a megabyte each).
    static let maxReportBytes = 16_384

    /// Stores a report as received, before the reply, so that an acknowledged report is never lost;
    /// with `counting`, in the same transaction as the in-app statistics it counts toward.
    func record(_ kind: SDKReport.Kind, app: String, request: DeviceRequest, name: String?, hash: String?,
                reply: JSON = .null, counting: InAppReport? = nil) throws -> Work {
        var bodyText = request.text
        if bodyText.utf8.count > Self.maxReportBytes, request.source != nil {
            // What the client sent may be padded; the limit applies to the compact encoding.
            bodyText = JSON.object(request.fields).text
        }
        let size = bodyText.utf8.count
        guard size <= Self.maxReportBytes else {
            throw ArgumentError("the report is \(size) bytes; at most \(Self.maxReportBytes) are kept (event attributes included)")
        }
        let report = SDKReport(
            kind: kind, app: app, hwid: try request.hwid(), userID: try request.optionalString("userId", maxLength: 256),
            platform: try request.platform(), name: name, hash: hash, bodyText: bodyText,
            timestampUTC: try request.optionalInt("timestampUTC"), timestampCurrent: try request.optionalInt("timestampCurrent"))
        let store = self.store, richMedia = self.richMedia, clock = self.clock
        guard let counting else { return { try store.record([report], now: clock.now()); return reply } }
        return { try richMedia.record(report, counting: counting, now: clock.now()); return reply }
    }
}
