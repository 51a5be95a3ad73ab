/// The device registry and report log behind the Device API. Ingest and workers depend on this
/// protocol only, so that another backend (PostgreSQL for multi-host deployments) can be added
/// without touching them. Every write is committed before the method returns; a method that throws
/// has changed nothing.
public protocol DeviceStore: Sendable {
    /// registerDevice: creates or updates the device, sets its push token and applies `tags`.
    func registerDevice(_ registration: DeviceRegistration, now: Int64) throws(StoreError)

    /// unregisterDevice: clears the push token; the device and its tags stay.
    func unregisterDevice(app: String, hwid: String, now: Int64) throws(StoreError)

    /// applicationOpen: updates the device's attributes and last open.
    func applicationOpen(app: String, hwid: String, attributes: DeviceAttributes, now: Int64) throws(StoreError)

    /// setTags: applies all updates or none.
    func setTags(app: String, hwid: String, attributes: DeviceAttributes, updates: [TagUpdate], now: Int64) throws(StoreError)

    /// getTags by hwid, or by user id (the tags of that user's most recently updated device).
    func getTags(app: String, hwid: String?, userID: String?) throws(StoreError) -> [String: TagValue]

    /// setBadge: the device's badge, also visible as the `badge` tag.
    func setBadge(app: String, hwid: String, attributes: DeviceAttributes, badge: Int64, now: Int64) throws(StoreError)

    /// registerUser: binds the device to `userID`.
    func registerUser(app: String, hwid: String, attributes: DeviceAttributes, userID: String, now: Int64) throws(StoreError)

    /// mergeUser: moves the old user's devices to the new user (`merge`), or detaches them.
    func mergeUser(app: String, oldUserID: String, newUserID: String, merge: Bool, now: Int64) throws(StoreError)

    /// Subscribes or unsubscribes a device (OneSignal `notification_types`).
    func setSubscribed(app: String, hwid: String, subscribed: Bool, now: Int64) throws(StoreError)

    /// The OneSignal helper's adddevice: the device holding `pushToken`, created with `newHWID`
    /// when there is none. Returns the device's hwid (the helper's `player_id`).
    func registerByToken(app: String, pushToken: String, attributes: DeviceAttributes, newHWID: String,
                         now: Int64) throws(StoreError) -> String

    /// Durably records SDK reports (events, opens, deliveries) as received.
    func record(_ reports: [SDKReport], now: Int64) throws(StoreError)

    /// One device, or nil.
    func device(app: String, hwid: String) throws(StoreError) -> DeviceRecord?

    /// Reports recorded for an application, oldest first (for tests and the analytics pipeline).
    func reports(app: String, limit: Int) throws(StoreError) -> [SDKReport]

    /// Whether the application is configured.
    func hasApplication(_ code: String) -> Bool

    /// Checks that the database answers (for `/healthz`).
    func ping() throws(StoreError)
}

extension DeviceStore {
    /// The badge is the `badge` tag, written like any other tag.
    public func setBadge(app: String, hwid: String, attributes: DeviceAttributes, badge: Int64, now: Int64) throws(StoreError) {
        try setTags(app: app, hwid: hwid, attributes: attributes,
                    updates: [TagUpdate(name: "badge", operation: .set(.int(badge)))], now: now)
    }
}
