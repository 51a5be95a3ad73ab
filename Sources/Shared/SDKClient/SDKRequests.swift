import Core

/// The `request` objects of the Device API calls, in the fields and types the Pushwoosh SDKs send
/// (every call names its application and device).
public enum SDKRequests {
    /// registerDevice: the device, its push token, and the tags given at registration.
    public static func registerDevice(app: String, _ device: SDKDevice) -> JSON {
        var fields = base(app: app, hwid: device.hwid)
        fields["device_type"] = .int(Int64(device.platform))
        fields["push_token"] = .string(device.token)
        if let language = device.language { fields["language"] = .string(language) }
        if let timezone = device.timezone { fields["timezone"] = .int(timezone) }
        if let user = device.userID { fields["userId"] = .string(user) }
        if let gateway = device.gateway { fields["gateway"] = .string(gateway) }
        if !device.tags.isEmpty { fields["tags"] = .object(device.tags) }
        return .object(fields)
    }

    /// unregisterDevice: clears the push token.
    public static func unregisterDevice(app: String, hwid: String) -> JSON { .object(base(app: app, hwid: hwid)) }

    /// setTags with `tags` as given (values, lists, `{"operation": …}` objects, null to delete).
    public static func setTags(app: String, hwid: String, _ tags: [String: JSON]) -> JSON {
        var fields = base(app: app, hwid: hwid)
        fields["tags"] = .object(tags)
        return .object(fields)
    }

    /// getTags of one device.
    public static func getTags(app: String, hwid: String) -> JSON { .object(base(app: app, hwid: hwid)) }

    /// postEvent: `attributes` is always present; the timestamps are UTC and UTC plus the local offset.
    public static func postEvent(app: String, hwid: String, event: String, attributes: [String: JSON] = [:], now: Int64,
                                 timezone: Int64 = 0) -> JSON {
        var fields = base(app: app, hwid: hwid)
        fields["event"] = .string(event)
        fields["attributes"] = .object(attributes)
        fields["timestampUTC"] = .int(now)
        fields["timestampCurrent"] = .int(now + timezone)
        return .object(fields)
    }

    /// pushStat (opened) or messageDeliveryEvent (delivered): the payload's `p` as `hash`.
    public static func pushTracking(app: String, hwid: String, hash: String) -> JSON {
        var fields = base(app: app, hwid: hwid)
        fields["hash"] = .string(hash)
        return .object(fields)
    }

    static func base(app: String, hwid: String) -> [String: JSON] {
        ["application": .string(app), "hwid": .string(hwid)]
    }
}
