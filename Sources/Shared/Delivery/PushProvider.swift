import Core

/// A push ready for a provider: the device it goes to and its encoded payload (the APNs payload
/// for iOS, the FCM v1 request body for Android), encoded once so that devices sharing a payload
/// share the bytes.
public struct OutgoingPush: Sendable {
    public enum Channel: String, Sendable {
        case apns
        case fcm
    }

    public var target: Target
    public var channel: Channel
    /// Compact JSON.
    public var body: [UInt8]

    public init(target: Target, channel: Channel, body: [UInt8]) {
        self.target = target
        self.channel = channel
        self.body = body
    }
}

/// Something that delivers pushes: APNs, FCM, or the file sink. A provider returns one outcome
/// per push, in order; it never throws, because every push must end with a recorded outcome.
public protocol PushProvider: Sendable {
    func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord]

    /// The provider's name for metrics (`apns`, `fcm`, `sink`) for pushes on `channel`.
    func name(for channel: OutgoingPush.Channel) -> String
}

extension PushProvider {
    public func name(for channel: OutgoingPush.Channel) -> String { channel.rawValue }
}
