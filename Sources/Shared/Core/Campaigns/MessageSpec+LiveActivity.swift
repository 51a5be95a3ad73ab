extension MessageSpec {
    /// A Live Activity push (`startLiveActivity`, `updateLiveActivity`): an APNs `liveactivity` push
    /// to the activity's tokens on the topic `<bundle id>.push-type.liveactivity` instead of an alert.
    public struct LiveActivity: Sendable, Equatable, Codable {
        /// `aps.event`.
        public enum Event: String, Sendable, Codable {
            case start, update, end
        }

        /// The topic suffix of every Live Activity push (activity tokens belong to that topic).
        public static let topicSuffix = ".push-type.liveactivity"
        /// The `apns-priority` values Apple takes for a Live Activity push: 10 is sent at once and
        /// counts against the activity's update budget, 5 is sent when the device's power allows.
        public static let priorities: Set<Int> = [5, 10]
        /// The longest activity id Herald keeps, in bytes: setActivityToken's `activity_id` and the
        /// Remote API's `live_activity_id`.
        public static let maximumIDLength = 256

        /// `live_activity_id`: the activity the SDK registered its tokens for.
        public var id: String
        public var event: Event
        /// `content-state`: the activity's dynamic data, decoded by the app's `ContentState`.
        public var contentState: [String: JSON]
        /// `attributes-type` and `attributes`: the activity's static data, on `start` only.
        public var attributesType: String?
        public var attributes: [String: JSON]?
        /// `dismissal-date` (unix seconds): when an ended activity leaves the lock screen.
        public var dismissalDate: Int64?
        /// `stale-date` (unix seconds): when the system shows the activity as out of date.
        public var staleDate: Int64?
        /// `apns-priority` (5 or 10); nil sends at 10.
        public var priority: Int?
        /// `aps.timestamp` (unix seconds), chosen by the store in the transaction that creates the
        /// message: newer than every earlier one of the activity, since the device drops a push
        /// whose timestamp is not newer.
        public var timestamp: Int64

        public init(id: String, event: Event, contentState: [String: JSON], timestamp: Int64) {
            self.id = id
            self.event = event
            self.contentState = contentState
            self.timestamp = timestamp
        }

        /// The activity id of the tokens the push goes to: "" (push-to-start tokens) for a start,
        /// the activity's id otherwise.
        public var tokenActivityID: String { event == .start ? "" : id }

        /// The `aps` dictionary; `alert` is the text shown on devices where the activity cannot
        /// start (a `start` only).
        func aps(alert: JSON?) -> [String: JSON] {
            var aps: [String: JSON] = [
                "timestamp": .int(timestamp), "event": .string(event.rawValue), "content-state": .object(contentState),
            ]
            if event == .start {
                if let attributesType { aps["attributes-type"] = .string(attributesType) }
                if let attributes { aps["attributes"] = .object(attributes) }
                if let alert { aps["alert"] = alert }
            }
            if let dismissalDate { aps["dismissal-date"] = .int(dismissalDate) }
            if let staleDate { aps["stale-date"] = .int(staleDate) }
            return aps
        }
    }
}
