/// Builds the APNs, FCM and Huawei Push Kit payloads of a `MessageSpec` in the shape the Pushwoosh
/// SDKs read (the keys are listed in the README's Campaigns section). Pure functions: the worker
/// passes the per-device inputs (message hash, device language, stored badge) and sends or sinks
/// the result.
///
/// Choices worth knowing:
/// - `rm` (rich media) is `{"url", "ts", "tags": {}}` from `richMediaLink` (the zip the SDK
///   downloads and its version): an object on iOS, its JSON text on Android.
/// - `u` is the compact JSON text of `data` (ingest turns a `data` string into its object first).
/// - A message kept in inboxes carries `pw_inbox` (the message code, the `inbox_id` of
///   `getInboxMessages`) and `inbox_params` {`rt`: its expiry in unix seconds as text, `image`}, so
///   the SDK files the push in its local inbox: an object on iOS, its JSON text on Android.
/// - Root params may override anything except the stats keys `pw_msg` and `p`; an `aps` root param
///   that is not an object is ignored.
public enum PayloadBuilder {
    /// APNs payload limit in bytes (also used for the FCM `data` map).
    public static let sizeLimit = 4096

    /// What lets the SDK file a push in its local inbox under the id `getInboxMessages` reports.
    public struct InboxLink: Sendable, Equatable {
        /// `pw_inbox`: the message code.
        public var code: String
        /// `inbox_params.rt`: when the copy leaves the inbox (unix seconds).
        public var expiresAt: Int64
        /// `inbox_params.image`.
        public var image: String?

        public init(code: String, expiresAt: Int64, image: String?) {
            self.code = code
            self.expiresAt = expiresAt
            self.image = image
        }

        /// The link of the copy kept for a push of message `code` sent at `sentAt`; nil when the
        /// message is not kept in inboxes.
        public init?(_ spec: MessageSpec, code: String, sentAt: Int64) {
            guard let inbox = spec.inbox else { return nil }
            self.init(code: code, expiresAt: inbox.expiry(sentAt: sentAt), image: inbox.image)
        }

        var params: JSON {
            var params: [String: JSON] = ["rt": .string(String(expiresAt))]
            if let image { params["image"] = .string(image) }
            return .object(params)
        }
    }

    /// Keys that root params may not override: without them the SDKs drop the push or its stats.
    static let protectedKeys: Set<String> = ["pw_msg", "p"]

    // MARK: APNs

    /// The APNs JSON payload for one device.
    /// - Parameters:
    ///   - hash: the message hash echoed by the SDK in `pushStat` / `messageDeliveryEvent` (`p`).
    ///   - language: the device language, for `localized(_:language:)`.
    ///   - badge: the device's stored badge, the base of a relative `ios_badges`.
    ///   - inbox: the device's inbox copy of the message, when it is kept in inboxes.
    public static func apns(_ spec: MessageSpec, hash: String, language: String?, badge: Int64, inbox: InboxLink? = nil) -> JSON {
        if let activity = spec.liveActivity {
            // A start without text shows nothing where the activity cannot start (`JSON` takes
            // `nil` as its null, hence no conditional expression here).
            var fallback: JSON?
            if !spec.content.isEmpty || spec.ios.content != nil { fallback = alert(spec, language: language) }
            return ["pw_msg": "1", "p": .string(hash), "aps": .object(activity.aps(alert: fallback))]
        }
        let ios = spec.ios
        var aps: [String: JSON] = [:]
        if ios.silent {
            aps["content-available"] = 1
        } else {
            aps["alert"] = alert(spec, language: language)
            if let change = ios.badges {
                aps["badge"] = .int(change.apply(to: badge))
                if case .add = change { aps["pw_badge"] = .string(change.text) }
            }
            if let sound = nonEmpty(ios.sound) { aps["sound"] = .string(sound) }
            if let level = nonEmpty(ios.interruptionLevel) { aps["interruption-level"] = .string(level) }
            aps["mutable-content"] = 1
        }
        if let category = nonEmpty(ios.categoryID) { aps["category"] = .string(category) }
        if let thread = nonEmpty(ios.threadID) { aps["thread-id"] = .string(thread) }

        var root: [String: JSON] = ["pw_msg": "1", "p": .string(hash)]
        if let data = customData(spec.data) { root["u"] = .string(data) }
        if let link = nonEmpty(spec.link) { root["l"] = .string(link) }
        if let richMedia = spec.richMediaLink { root["rm"] = richMedia.json }
        if let attachment = nonEmpty(ios.attachment) { root["attachment"] = .string(attachment) }
        if let inbox {
            root["pw_inbox"] = .string(inbox.code)
            root["inbox_params"] = inbox.params
        }

        for (key, value) in ios.rootParams ?? [:] where !protectedKeys.contains(key) {
            if key == "aps" {
                for (member, memberValue) in value.objectValue ?? [:] { aps[member] = memberValue }
            } else {
                root[key] = value
            }
        }
        root["aps"] = .object(aps)
        return .object(root)
    }

    /// `aps.alert`: the body alone, or an object when there is a title or subtitle.
    static func alert(_ spec: MessageSpec, language: String?) -> JSON {
        let body = localized(spec.ios.content ?? spec.content, language: language)
        let title = text(spec.ios.title ?? spec.title, language)
        let subtitle = text(spec.ios.subtitle ?? spec.subtitle, language)
        if title == nil && subtitle == nil { return .string(body) }
        var alert: [String: JSON] = ["body": .string(body)]
        if let title { alert["title"] = .string(title) }
        if let subtitle { alert["subtitle"] = .string(subtitle) }
        return .object(alert)
    }

    /// The APNs request headers that depend on the message.
    public struct APNsHeaders: Sendable, Equatable {
        /// `apns-push-type`: `alert`, `background` for silent pushes, `liveactivity` for Live Activities.
        public var pushType: String
        /// `apns-priority`: 10, or 5 for silent pushes (APNs rejects 10 with `background`).
        public var priority: Int
        /// `apns-expiration` in unix seconds; 0 means "try once, never store"; nil leaves APNs' default.
        public var expiration: Int64?
        /// `apns-collapse-id`.
        public var collapseID: String?
        /// Appended to the app's bundle id to form `apns-topic`.
        public var topicSuffix: String

        public init(pushType: String, priority: Int, expiration: Int64?, collapseID: String?, topicSuffix: String = "") {
            self.pushType = pushType
            self.priority = priority
            self.expiration = expiration
            self.collapseID = collapseID
            self.topicSuffix = topicSuffix
        }
    }

    /// The APNs headers of `spec` sent at `now` (unix seconds). `ios_ttl` becomes `now + ttl`;
    /// a ttl of 0 (or less) becomes expiration 0. A Live Activity push goes at its priority (10
    /// unless it asks for 5) to the `.push-type.liveactivity` topic.
    public static func apnsHeaders(_ spec: MessageSpec, now: Int64) -> APNsHeaders {
        let silent = spec.ios.silent
        let expiration = spec.ios.ttl.map { ttl in ttl > 0 ? now + ttl : 0 }
        if let activity = spec.liveActivity {
            return APNsHeaders(pushType: "liveactivity", priority: activity.priority ?? 10, expiration: expiration, collapseID: nil,
                               topicSuffix: MessageSpec.LiveActivity.topicSuffix)
        }
        return APNsHeaders(pushType: silent ? "background" : "alert", priority: silent ? 5 : 10,
                           expiration: expiration, collapseID: nonEmpty(spec.ios.collapseID))
    }

    // MARK: FCM

    /// The FCM HTTP v1 request body for one device: a data-only message (no `notification` block)
    /// so that the Pushwoosh Android SDK always draws the notification and reports delivery.
    /// - Parameter badge: unused by the Android form: the SDK applies `pw_badges` (`"5"`, `"+1"`)
    ///   to its own counter. Accepted so both builders take the same per-device inputs.
    public static func fcm(_ spec: MessageSpec, hash: String, token: String, language: String?, badge: Int64,
                           inbox: InboxLink? = nil) -> JSON {
        let parts = fcmParts(spec, hash: hash, language: language, inbox: inbox)
        return ["message": ["token": .string(token), "data": parts.data, "android": parts.android]]
    }

    /// The FCM message's members other than `token`: `android` and `data`.
    static func fcmParts(_ spec: MessageSpec, hash: String, language: String?, inbox: InboxLink?) -> (android: JSON, data: JSON) {
        let android = spec.android
        let data = androidData(spec, hash: hash, language: language, inbox: inbox)
        var androidConfig: [String: JSON] = ["priority": (android.priority ?? 1) >= 1 ? "HIGH" : "NORMAL"]
        if let ttl = android.ttl { androidConfig["ttl"] = .string("\(max(0, ttl))s") }
        return (.object(androidConfig), .object(data.mapValues { .string($0) }))
    }

    /// The encoded FCM request bodies of one message for the devices of one language: byte for byte
    /// `fcm(...).encoded()`, with the parts that do not depend on the token encoded once.
    public struct FCMBodies: Sendable {
        /// `{"message":{"android":…,"data":…,"token":` (members in the encoder's sorted order).
        private let head: [UInt8]

        public init(_ spec: MessageSpec, hash: String, language: String?, inbox: InboxLink? = nil) {
            let parts = PayloadBuilder.fcmParts(spec, hash: hash, language: language, inbox: inbox)
            var head = Array(#"{"message":{"android":"#.utf8)
            parts.android.write(to: &head)
            head.append(contentsOf: #","data":"#.utf8)
            parts.data.write(to: &head)
            head.append(contentsOf: #","token":"#.utf8)
            self.head = head
        }

        /// The body for the device whose registration token is `token`.
        public func body(token: String) -> [UInt8] {
            var body = head
            body.reserveCapacity(head.count + token.utf8.count + 8)
            JSON.writeString(token, to: &body)
            body.append(contentsOf: "}}".utf8)
            return body
        }
    }

    /// The data map the Pushwoosh Android SDK reads (every value a string), the same through FCM and
    /// Huawei Push Kit.
    static func androidData(_ spec: MessageSpec, hash: String, language: String?, inbox: InboxLink?) -> [String: String] {
        let android = spec.android
        var data: [String: String] = ["pw_msg": "1", "p": hash]
        // The Android SDK reads `title` as the body text and `header` as the title.
        let body = localized(android.content ?? spec.content, language: language)
        // A silent message shows nothing: no empty text for the SDK to draw.
        data["title"] = android.silent && body.isEmpty ? nil : body
        data["header"] = text(android.header ?? spec.title, language)
        data["u"] = customData(spec.data)
        data["l"] = nonEmpty(spec.link)
        data["rm"] = spec.richMediaLink?.json.text
        data["s"] = nonEmpty(android.sound)
        data["pri"] = android.priority.map { String(min(2, max(-2, $0))) }
        data["i"] = nonEmpty(android.icon)
        data["ci"] = nonEmpty(android.customIcon)
        data["b"] = nonEmpty(android.banner)
        data["pw_badges"] = android.badges?.text
        data["vib"] = android.vibration.map { $0 ? "1" : "0" }
        data["led"] = nonEmpty(android.led)
        data["ibc"] = nonEmpty(android.iconBackgroundColor)
        if android.silent { data["silent"] = "1" }
        data["pw_inbox"] = inbox?.code
        data["inbox_params"] = inbox?.params.text
        for (key, value) in android.rootParams ?? [:] where !protectedKeys.contains(key) {
            data[key] = value.stringValue ?? value.text
        }
        return data
    }

    // MARK: Size check

    /// Why `spec` cannot be delivered because a payload is too large, or nil when every language
    /// variant fits: the APNs payload (compact JSON, 64-char hash, badge 0) and the Android `data` map
    /// (FCM's map, Huawei's JSON text of the same map) must each stay within 4096 bytes. Platforms
    /// excluded by `spec.platforms` are not checked.
    public static func sizeCheck(_ spec: MessageSpec) -> String? {
        let hash = String(repeating: "0", count: 64)
        // A code as long as any (4, 8 and 8 hex digits) and a 10-digit expiry.
        let inbox = InboxLink(spec, code: "0000-00000000-00000000", sentAt: 4_000_000_000)
        let checkIOS = spec.platforms?.contains(Platform.iOS) ?? true
        let checkAndroid = spec.platforms.map { $0.contains(Platform.android) || $0.contains(Platform.huawei) } ?? true
        let androidProvider = (spec.platforms?.contains(Platform.android) ?? true) ? "FCM" : "Huawei Push Kit"
        var languages: Set<String> = []
        let texts: [MessageSpec.LocalizedText?] = [
            spec.content, spec.title, spec.subtitle, spec.ios.title, spec.ios.subtitle, spec.ios.content,
            spec.android.header, spec.android.content,
        ]
        for case let text? in texts { languages.formUnion(text.keys) }
        let variants: [String?] = languages.isEmpty ? [nil] : languages.sorted().map(Optional.some)
        for language in variants {
            let suffix = language.map { " (language \"\($0)\")" } ?? ""
            if checkIOS {
                let size = apns(spec, hash: hash, language: language, badge: 0, inbox: inbox).encoded().count
                if size > sizeLimit {
                    return "payload of \(size) bytes exceeds the APNs limit of \(sizeLimit) bytes\(suffix)"
                }
            }
            if checkAndroid {
                let message = fcm(spec, hash: hash, token: "", language: language, badge: 0, inbox: inbox)
                let size = message["message"]?["data"]?.encoded().count ?? 0
                if size > sizeLimit {
                    return "\(androidProvider) data of \(size) bytes exceeds the limit of \(sizeLimit) bytes\(suffix)"
                }
            }
        }
        return nil
    }

    // MARK: Helpers

    /// The localized text, or nil when there is none or it is empty.
    static func text(_ text: MessageSpec.LocalizedText?, _ language: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return nonEmpty(localized(text, language: language))
    }

    static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    /// `u`: custom data as JSON text (both SDKs read it as a string).
    static func customData(_ data: JSON?) -> String? {
        switch data {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let value?: return value.text
        }
    }
}
