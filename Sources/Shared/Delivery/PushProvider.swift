/// A push ready for a provider: the device it goes to and its payload (the APNs payload for iOS,
/// the FCM v1 request body for Android).
public struct OutgoingPush: Sendable {
    public enum Channel: String, Sendable {
        case apns
        case fcm
    }

    public var target: Target
    public var channel: Channel
    public var payload: JSON

    public init(target: Target, channel: Channel, payload: JSON) {
        self.target = target
        self.channel = channel
        self.payload = payload
    }
}

/// Something that delivers pushes: APNs, FCM, or the file sink. A provider returns one outcome
/// per push, in order; it never throws, because every push must end with a recorded outcome.
public protocol PushProvider: Sendable {
    func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord]
}
