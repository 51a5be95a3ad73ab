/// The Live Activity tokens devices register. Every write is committed before the method returns.
public protocol LiveActivityTokenStore: Sendable {
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
}
