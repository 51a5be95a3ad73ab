/// A Live Activity token an iOS device registered: an activity token (`setActivityToken`, for the
/// pushes that update and end one activity) or a push-to-start token (`setActivityPushToStartToken`,
/// for the push that starts one).
public struct LiveActivityToken: Sendable, Equatable {
    public var hwid: String
    /// The activity (`activity_id`), or nil for a push-to-start token.
    public var activityID: String?
    public var token: String
    /// False once the activity ended (an ended activity takes no more pushes).
    public var active: Bool
    /// The `aps.timestamp` last sent to the activity through this token, or nil.
    public var lastTimestamp: Int64?

    package init(hwid: String, activityID: String?, token: String, active: Bool, lastTimestamp: Int64?) {
        self.hwid = hwid
        self.activityID = activityID
        self.token = token
        self.active = active
        self.lastTimestamp = lastTimestamp
    }
}
