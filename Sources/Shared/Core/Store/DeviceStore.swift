/// The device registry and report log behind the Device API. Ingest and workers depend on this
/// protocol only, so that another backend (PostgreSQL for multi-host deployments) can be added
/// without touching them. Every write is committed before the method returns; a method that throws
/// has changed nothing.
public protocol DeviceStore: Sendable {
    /// registerDevice: creates or updates the device, sets its push token and applies `tags`.
    func registerDevice(_ registration: DeviceRegistration, now: Int64) throws(StoreError)

    /// unregisterDevice: clears the push token; the device and its tags stay.
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

    /// setTags: applies all updates or none.
    func setTags(app: String, hwid: String, attributes: DeviceAttributes, updates: [TagUpdate], now: Int64) throws(StoreError)

    /// setTags by user: applies `updates` to every device bound to `userID`, all or none (a value
    /// one device cannot take fails the whole call). Returns how many devices were updated.
    func setUserTags(app: String, userID: String, updates: [TagUpdate], now: Int64) throws(StoreError) -> Int

    /// getTags by hwid, or by user id: then each tag's value is the one of the most recently updated
    /// of the user's devices that has the tag.
    func getTags(app: String, hwid: String?, userID: String?) throws(StoreError) -> [String: TagValue]

    /// addTag: defines `name` as `type`. Returns the type the tag already had, or nil when it was created.
    func addTag(app: String, name: String, type: TagType, now: Int64) throws(StoreError) -> TagType?

    /// deleteTag: removes the definition and the tag's values from every device of the application.
    /// Returns false when no such tag is defined.
    func deleteTag(app: String, name: String) throws(StoreError) -> Bool

    /// setBadge: the device's badge, also visible as the `badge` tag.
    func setBadge(app: String, hwid: String, attributes: DeviceAttributes, badge: Int64, now: Int64) throws(StoreError)

    /// bulkSetTags: stores a job over `devices` (the request's entries as JSON text, kept until the job
    /// completes) in status Pending.
    func createBulkTagJob(id: String, app: String, createMissingTags: Bool, devices: String, total: Int, now: Int64) throws(StoreError)

    /// A job and up to `errorLimit` of its entry errors (by position), or nil.
    func bulkTagJob(id: String, errorLimit: Int) throws(StoreError) -> (BulkTagJob, [BulkTagError])?

    /// Jobs not completed or failed, oldest first, with their stored entries.
    func unfinishedBulkTagJobs() throws(StoreError) -> [(job: BulkTagJob, devices: String)]

    /// Applies `entries` (positions `from` …) in one transaction that also advances the job's progress;
    /// an entry that cannot be applied changes nothing and is recorded as an error. Returns false,
    /// changing nothing, when the job's progress is no longer `from` (another process applied them).
    func applyBulkTags(job: BulkTagJob, from: Int, entries: [BulkTagEntry], now: Int64) throws(StoreError) -> Bool

    /// Marks a job Failed (its stored entries cannot be read back).
    func failBulkTagJob(id: String, reason: String, now: Int64) throws(StoreError)
    /// Retention: deletes up to `limit` finished (completed or failed) bulkSetTags jobs last updated
    /// before `before`, with their error rows; returns how many jobs went.
    func pruneBulkTagJobs(finishedBefore before: Int64, limit: Int) throws(StoreError) -> Int

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

    /// Keeps a Live Activity token of device `hwid` (created from `attributes` when new), active: the
    /// token of activity `activityID`, or the device's push-to-start token when `activityID` is nil.
    /// A new token for the same device and activity replaces the old one.
    func setActivityToken(app: String, hwid: String, attributes: DeviceAttributes, activityID: String?, token: String,
                          now: Int64) throws(StoreError)

    /// Marks the activity tokens of device `hwid` inactive (the SDK's `stopLiveActivity`): those of
    /// activity `activityID`, or all of them when nil; its push-to-start token stays. Returns how many
    /// changed (none for an unknown device).
    @discardableResult
    func deactivateActivityTokens(app: String, hwid: String, activityID: String?, now: Int64) throws(StoreError) -> Int

    /// The Live Activity tokens of device `hwid`, the push-to-start token first, then by activity.
    func activityTokens(app: String, hwid: String) throws(StoreError) -> [LiveActivityToken]

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
