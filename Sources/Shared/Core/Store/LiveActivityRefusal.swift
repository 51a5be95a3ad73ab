/// Why the store refuses an update or end of a Live Activity (`CampaignStore.createMessages`); the
/// caller's mistake, answered 210.
public enum LiveActivityRefusal: Sendable, Equatable {
    /// No device of the application ever registered a token for the activity.
    case unknown
    /// The activity ended: an end was already accepted, or all its tokens are inactive.
    case ended

    /// The store error naming the request's field, `<path>.live_activity_id` (`path` nil: the request's own field).
    public func error(activityID: String, path: String?) -> StoreError {
        let field = (path.map { $0 + "." } ?? "") + "live_activity_id"
        let id = "\"\(activityID.prefix(64))\""
        switch self {
        case .unknown:
            return .invalid("\(field): no device registered a token for activity \(id) (setActivityToken); start it first")
        case .ended:
            return .invalid("\(field): activity \(id) has ended; it takes no more updates")
        }
    }
}
