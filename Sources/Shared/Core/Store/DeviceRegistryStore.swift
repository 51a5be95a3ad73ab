/// The device registry behind the Device API and the OneSignal helper: devices, their push tokens,
/// subscriptions and users. Every write is committed before the method returns; a method that
/// throws has changed nothing.
public protocol DeviceRegistryStore: Sendable {
    /// registerDevice: creates or updates the device, sets its push token and applies `tags`.
    func registerDevice(_ registration: DeviceRegistration, now: Int64) throws(StoreError)

    /// unregisterDevice: clears the push token and a browser's subscription keys (nothing that can
    /// reach the device is kept); the device and its tags stay.
    func unregisterDevice(app: String, hwid: String, now: Int64) throws(StoreError)

    /// deleteDevice (the Web SDK's removeAllDeviceData): forgets the device. Its hwid, push token,
    /// subscription keys, user, attributes, tags, Live Activity tokens and inbox statuses go; the
    /// hwid then names no device, so a later registration with it starts a new one. The row itself
    /// stays, anonymous (a random `deleted:` hwid, only its platform, app version and dates kept), so
    /// that its id is never given to another device and the statistics that count it (deliveries,
    /// opt-in history) keep their totals. Returns false, changing nothing, for an unknown hwid.
    @discardableResult
    func deleteDevice(app: String, hwid: String, now: Int64) throws(StoreError) -> Bool

    /// applicationOpen: updates the device's attributes and last open.
    func applicationOpen(app: String, hwid: String, attributes: DeviceAttributes, now: Int64) throws(StoreError)

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

    /// One device, or nil.
    func device(app: String, hwid: String) throws(StoreError) -> DeviceRecord?

    /// Whether the application is configured.
    func hasApplication(_ code: String) -> Bool

    /// Checks that the database answers (for `/healthz`).
    func ping() throws(StoreError)
}
