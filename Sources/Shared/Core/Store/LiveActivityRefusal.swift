/// Why the store refuses an update or end of a Live Activity (`CampaignStore.createMessages`); the
/// caller's mistake, answered 210.
public enum LiveActivityRefusal: Sendable, Equatable {
    /// No device of the application ever registered a token for the activity.
    case unknown
    /// The activity ended: an end was already accepted, or all its tokens are inactive.
    case ended

    /// The refusal of an update or end whose activity has `registeredTokens` tokens, `activeTokens`
    /// of them active; nil when it may be sent.
    public init?(registeredTokens: Int64, activeTokens: Int64) {
        if registeredTokens == 0 {
            self = .unknown
        } else if activeTokens == 0 {
            self = .ended
        } else {
            return nil
        }
    }

    /// The store error for `message`, naming its field `<path>.live_activity_id`.
    public func error(for message: NewMessage) -> StoreError {
        let field = (message.path.map { $0 + "." } ?? "") + "live_activity_id"
        let id = "\"\((message.spec.liveActivity?.id ?? "").prefix(64))\""
        switch self {
        case .unknown:
            return .invalid("\(field): no device registered a token for activity \(id) (setActivityToken); start it first")
        case .ended:
            return .invalid("\(field): activity \(id) has ended; it takes no more updates")
        }
    }
}

extension NewMessage {
    /// The spec of a Live Activity message with the `aps.timestamp` its store chose.
    package func spec(timestamp: Int64) -> MessageSpec {
        var spec = self.spec
        spec.liveActivity?.timestamp = timestamp
        return spec
    }
}
