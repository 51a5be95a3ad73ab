/// What the SDKs tell us about a device, beyond its identity. Nil fields leave the stored value alone.
public struct DeviceAttributes: Sendable, Equatable {
    /// Pushwoosh `device_type` (1 iOS, 3 Android, ...).
    public var platform: Int?
    public var language: String?
    /// UTC offset in seconds.
    public var timezoneOffset: Int64?
    public var appVersion: String?
    public var osVersion: String?
    public var deviceModel: String?
    public var sdkVersion: String?
    public var userID: String?
    public var notificationTypes: Int64?

    public init(platform: Int? = nil, language: String? = nil, timezoneOffset: Int64? = nil, appVersion: String? = nil,
                osVersion: String? = nil, deviceModel: String? = nil, sdkVersion: String? = nil, userID: String? = nil,
                notificationTypes: Int64? = nil) {
        self.platform = platform
        self.language = language
        self.timezoneOffset = timezoneOffset
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.deviceModel = deviceModel
        self.sdkVersion = sdkVersion
        self.userID = userID
        self.notificationTypes = notificationTypes
    }
}

/// A browser's Web Push subscription keys as the Pushwoosh Web SDK registers them (`public_key`,
/// `auth_token`): base64 text, stored as given. The subscription's endpoint is the push token.
public struct WebPushKeys: Sendable, Equatable {
    /// The user agent's P-256 public key.
    public var p256dh: String
    /// The authentication secret.
    public var auth: String

    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// A registerDevice call.
public struct DeviceRegistration: Sendable, Equatable {
    public var app: String
    public var hwid: String
    public var pushToken: String
    /// `sandbox` or `production` (iOS); nil elsewhere.
    public var gateway: String?
    /// A browser's subscription keys; nil elsewhere. A registration replaces the stored keys.
    public var webKeys: WebPushKeys?
    public var attributes: DeviceAttributes
    public var tags: [TagUpdate]

    public init(app: String, hwid: String, pushToken: String, gateway: String?, webKeys: WebPushKeys? = nil,
                attributes: DeviceAttributes, tags: [TagUpdate]) {
        self.app = app
        self.hwid = hwid
        self.pushToken = pushToken
        self.gateway = gateway
        self.webKeys = webKeys
        self.attributes = attributes
        self.tags = tags
    }
}

/// A stored device, as the registry knows it.
public struct DeviceRecord: Sendable, Equatable {
    public var hwid: String
    public var platform: Int
    public var pushToken: String?
    public var gateway: String?
    public var language: String?
    public var timezoneOffset: Int64?
    public var appVersion: String?
    public var osVersion: String?
    public var deviceModel: String?
    public var sdkVersion: String?
    public var userID: String?
    public var subscribed: Bool
    public var badge: Int64
    public var lastOpenAt: Int64?

    package init(hwid: String, platform: Int, pushToken: String?, gateway: String?, language: String?, timezoneOffset: Int64?,
                 appVersion: String?, osVersion: String?, deviceModel: String?, sdkVersion: String?, userID: String?,
                 subscribed: Bool, badge: Int64, lastOpenAt: Int64?) {
        self.hwid = hwid
        self.platform = platform
        self.pushToken = pushToken
        self.gateway = gateway
        self.language = language
        self.timezoneOffset = timezoneOffset
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.deviceModel = deviceModel
        self.sdkVersion = sdkVersion
        self.userID = userID
        self.subscribed = subscribed
        self.badge = badge
        self.lastOpenAt = lastOpenAt
    }
}

/// Something an SDK reported: an event, an open (pushStat) or a delivery (messageDeliveryEvent).
public struct SDKReport: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case event
        case pushStat = "push_stat"
        case delivery
        /// setPurchase.
        case purchase
        /// In-app, rich-media, inbox and live-activity actions (`name` is the method).
        case action
    }

    public var kind: Kind
    public var app: String
    public var hwid: String
    public var userID: String?
    public var platform: Int?
    /// Event name (events only).
    public var name: String?
    /// The payload hash `p` (opens and deliveries; events carry `msgHash` in attributes).
    public var hash: String?
    /// The request as received (attributes, metaData ...), read from `bodyText` (null when that
    /// does not parse).
    public var body: JSON { (try? JSON.parse(bodyText)) ?? .null }
    /// The request's compact encoding, as the stores keep it: encoded once, where the report is made.
    /// A report holds only this text, so that the thread that stores it never frees a parsed tree.
    public let bodyText: String
    public var timestampUTC: Int64?
    public var timestampCurrent: Int64?

    /// A report whose body is already encoded (`bodyText` is a JSON document).
    public init(kind: Kind, app: String, hwid: String, userID: String?, platform: Int?, name: String?, hash: String?,
                bodyText: String, timestampUTC: Int64?, timestampCurrent: Int64?) {
        self.kind = kind
        self.app = app
        self.hwid = hwid
        self.userID = userID
        self.platform = platform
        self.name = name
        self.hash = hash
        self.bodyText = bodyText
        self.timestampUTC = timestampUTC
        self.timestampCurrent = timestampCurrent
    }

    /// A report of `body`, encoded here.
    public init(kind: Kind, app: String, hwid: String, userID: String?, platform: Int?, name: String?, hash: String?,
                body: JSON, timestampUTC: Int64?, timestampCurrent: Int64?) {
        self.init(kind: kind, app: app, hwid: hwid, userID: userID, platform: platform, name: name, hash: hash,
                  bodyText: body.text, timestampUTC: timestampUTC, timestampCurrent: timestampCurrent)
    }
}
