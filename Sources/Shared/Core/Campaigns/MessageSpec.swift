import Foundation

/// One notification of a `createMessage` call, validated and normalised. Ingest stores it in the
/// outbox as JSON; workers read it back to resolve targets and build payloads.
public struct MessageSpec: Sendable, Equatable, Codable {
    /// Text per language; the key `default` holds a plain-string value.
    public typealias LocalizedText = [String: String]

    public var content: LocalizedText
    public var title: LocalizedText?
    public var subtitle: LocalizedText?
    /// Custom data (`data`), delivered as the JSON string `u`.
    public var data: JSON?
    public var link: String?
    /// `rich_media` as the request gave it: a page code (or a zip's URL).
    public var richMedia: String?
    /// Where that page is downloaded and its version, resolved when the message is created: the
    /// payload's `rm`.
    public var richMediaLink: RichMediaLink?
    /// The message inbox options (`inbox_date`, `inbox_days`, `inbox_image`): when set, every device
    /// the push is sent to keeps the message in its inbox until it expires.
    public var inbox: InboxOptions?
    /// Pushwoosh `device_type` codes to include; nil means every platform Herald delivers to.
    public var platforms: [Int]?
    /// Explicit targets: hwids or push tokens (`devices`), or user ids (`users`, which win).
    public var devices: [String]?
    public var users: [String]?
    public var conditions: [TagCondition]
    public var conditionsOperator: ConditionsOperator
    /// The audience of a `createTargetedMessage` (`devices_filter`), instead of the targeting above.
    public var filter: DeviceFilter?
    /// Campaign-wide pushes per second, across all workers.
    public var sendRate: Int?
    /// At most `cappingCount` pushes per device in `cappingDays` days, counting this one.
    public var cappingDays: Int?
    public var cappingCount: Int?
    public var ios: IOSOptions
    public var android: AndroidOptions
    /// Options of Web Push browsers (Chrome, Firefox, Edge); nil when the message sets none.
    public var web: WebOptions?
    /// Set for a Live Activity push, which replaces the alert (see `LiveActivity`).
    public var liveActivity: LiveActivity?
    public var schedule: Schedule

    public init(content: LocalizedText) {
        self.content = content
        conditions = []
        conditionsOperator = .and
        ios = IOSOptions()
        android = AndroidOptions()
        schedule = Schedule(sendAt: 0, perDeviceTimezone: false)
    }

    /// When the message goes out.
    public struct Schedule: Sendable, Equatable, Codable {
        /// Unix seconds. When `perDeviceTimezone` is set, this is the wall-clock time read as UTC,
        /// and each device receives the message when its own clock shows that time.
        public var sendAt: Int64
        public var perDeviceTimezone: Bool
        /// `send_date` and `timezone` as the request gave them (nil for "now" and for no zone).
        public var givenSendDate: String?
        public var givenTimezone: String?

        public init(sendAt: Int64, perDeviceTimezone: Bool) {
            self.sendAt = sendAt
            self.perDeviceTimezone = perDeviceTimezone
        }

        /// The moment a device with this UTC offset (seconds) should receive the message.
        public func dueAt(timezoneOffset: Int64?) -> Int64 {
            perDeviceTimezone ? sendAt - (timezoneOffset ?? 0) : sendAt
        }

        /// The earliest moment any device is due (UTC+14 is the earliest zone).
        public var earliestDueAt: Int64 { perDeviceTimezone ? sendAt - 14 * 3600 : sendAt }
    }

    /// `ios_badges`: an absolute badge or a change of the device's stored badge.
    public enum BadgeChange: Sendable, Equatable, Codable {
        case set(Int64)
        case add(Int64)

        /// The badge to show on a device whose stored badge is `current`.
        public func apply(to current: Int64) -> Int64 {
            switch self {
            case .set(let value): return max(0, value)
            case .add(let delta): return max(0, current + delta)
            }
        }

        /// The Pushwoosh form: `"5"`, `"+1"`, `"-2"`.
        public var text: String {
            switch self {
            case .set(let value): return String(value)
            case .add(let delta): return delta >= 0 ? "+\(delta)" : String(delta)
            }
        }
    }

    /// How a message is kept in its recipients' inboxes.
    public struct InboxOptions: Sendable, Equatable, Codable {
        /// How long a message stays when neither `inbox_date` nor `inbox_days` is given: 30 days,
        /// the longest `inbox_days` allows.
        public static let defaultDays = 30

        /// `inbox_image`: the picture the SDK shows next to the message.
        public var image: String?
        /// `inbox_date`: when the message leaves every inbox (unix seconds).
        public var expiresAt: Int64?
        /// `inbox_days`: how many days after its push each recipient keeps the message.
        public var days: Int?

        public init(image: String? = nil, expiresAt: Int64? = nil, days: Int? = nil) {
            self.image = image
            self.expiresAt = expiresAt
            self.days = days
        }

        /// When a copy whose push was sent at `sentAt` expires.
        public func expiry(sentAt: Int64) -> Int64 {
            expiresAt ?? sentAt + (keptSeconds ?? 0)
        }

        /// How long each recipient keeps the message after its push, in seconds; nil with a fixed `expiresAt`.
        public var keptSeconds: Int64? {
            expiresAt == nil ? Int64(days ?? Self.defaultDays) * 86_400 : nil
        }

        /// `messages.inbox_until` of a new message: its fixed expiry, or `InboxBounds.sending` while
        /// the expiry of its last copy is not known yet.
        package var storedUntil: Int64 { expiresAt ?? InboxBounds.sending }
    }

    /// The platforms on which the message is silent: only there does it reach devices that are not
    /// opted in (`notificationTypes` 0), since a silent push shows nothing. A Web Push message is
    /// never silent (browsers show every push).
    public var silentPlatforms: [Int] {
        Platform.deliverable.filter { Platform.usesAPNs($0) ? ios.silent : Platform.usesAndroidOptions($0) && android.silent }
    }

    public struct IOSOptions: Sendable, Equatable, Codable {
        public var title: LocalizedText?
        public var subtitle: LocalizedText?
        public var content: LocalizedText?
        public var badges: BadgeChange?
        public var sound: String?
        /// Seconds the push may wait in APNs (`apns-expiration`).
        public var ttl: Int64?
        /// A background push: `content-available`, priority 5, no alert.
        public var silent: Bool = false
        public var categoryID: String?
        public var threadID: String?
        public var collapseID: String?
        public var attachment: String?
        /// Merged into the APNs payload root (`aps` members are merged into `aps`).
        public var rootParams: [String: JSON]?
        /// `aps.interruption-level`: passive, active, time-sensitive or critical.
        public var interruptionLevel: String?

        public init() {}
    }

    public struct AndroidOptions: Sendable, Equatable, Codable {
        public var header: LocalizedText?
        public var content: LocalizedText?
        public var sound: String?
        /// -2 … 2.
        public var priority: Int?
        public var icon: String?
        public var customIcon: String?
        public var banner: String?
        public var badges: BadgeChange?
        /// Seconds FCM keeps the message.
        public var ttl: Int64?
        public var vibration: Bool?
        public var led: String?
        public var iconBackgroundColor: String?
        public var silent: Bool = false
        /// Merged into the FCM `data` map (values become strings).
        public var rootParams: [String: JSON]?

        public init() {}
    }
}

extension MessageSpec {
    /// What a Web Push notification shows and how the push service treats it. The Pushwoosh Web SDK
    /// draws the notification itself from the payload (`PayloadBuilder.web`).
    public struct WebOptions: Sendable, Equatable, Codable {
        /// The notification title (`header`); the message `title` when nil.
        public var title: LocalizedText?
        /// The icon URL (`i`).
        public var icon: String?
        /// A large picture URL (`image`).
        public var image: String?
        /// Seconds the notification stays on screen, 0 for until closed (`duration`).
        public var duration: Int?
        /// Up to two action buttons.
        public var buttons: [Button]?
        /// Seconds the push service keeps the message (`TTL`).
        public var ttl: Int64?
        /// `Urgency`: very-low, low, normal or high.
        public var urgency: String?
        /// `Topic`: a message with the same topic replaces one still waiting in the push service.
        public var topic: String?
        /// Merged into the payload root.
        public var rootParams: [String: JSON]?

        public init() {}

        /// An action button: its label and the URL it opens.
        public struct Button: Sendable, Equatable, Codable {
            public var title: String
            public var url: String?

            public init(title: String, url: String?) {
                self.title = title
                self.url = url
            }
        }

        /// The `Urgency` values of RFC 8030 §5.3.
        public static let urgencies = ["very-low", "low", "normal", "high"]
        /// The longest `Topic` (RFC 8030 §5.4): 32 characters of the base64url alphabet.
        public static let topicLength = 32

        /// Whether `topic` may be sent as a `Topic` header.
        public static func isValidTopic(_ topic: String) -> Bool {
            !topic.isEmpty && topic.utf8.count <= topicLength && topic.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
        }
    }
}

/// How the conditions of a message combine.
public enum ConditionsOperator: String, Sendable, Codable {
    case and = "AND"
    case or = "OR"
}

/// Picks the text for a device language: exact (`zh-Hans`), then the base language (`zh`), then
/// `default`, then `en`, then the first language in sort order.
public func localized(_ text: MessageSpec.LocalizedText, language: String?) -> String {
    if let language {
        let lowered = language.lowercased()
        if let exact = text[language] ?? text[lowered] { return exact }
        if let base = lowered.split(separator: "-").first.map(String.init), let match = text[base] { return match }
    }
    if let fallback = text["default"] ?? text["en"] { return fallback }
    return text.keys.sorted().first.flatMap { text[$0] } ?? ""
}
