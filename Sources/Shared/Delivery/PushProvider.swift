import Core
import HTTP2
import WebPush

/// A push ready for a provider: the device it goes to and its encoded payload (the APNs payload
/// for iOS, the FCM v1 request body for Android, the Push Kit request body for Huawei, the Web Push
/// payload before encryption for a browser), encoded once so that devices sharing a payload share
/// the bytes.
public struct OutgoingPush: Sendable {
    public enum Channel: String, Sendable, CaseIterable {
        case apns
        case fcm
        case huawei
        case web

        /// The channel a device of this `device_type` is delivered through: APNs for iOS, Huawei
        /// Push Kit for Huawei, Web Push for the browsers of `Platform.web`, FCM for the others.
        public init(platform: Int) {
            switch platform {
            case Platform.iOS: self = .apns
            case Platform.huawei: self = .huawei
            case _ where Platform.usesWebPush(platform): self = .web
            default: self = .fcm
            }
        }
    }

    public var target: Target
    public var channel: Channel
    /// Compact JSON.
    public var body: [UInt8]
    /// `web`: the browser's subscription (its endpoint is the device's push token); the body is
    /// encrypted for its keys as it is sent. A web push without one fails.
    public var subscription: WebSubscription?

    public init(target: Target, channel: Channel, body: [UInt8], subscription: WebSubscription? = nil) {
        self.target = target
        self.channel = channel
        self.body = body
        self.subscription = subscription
    }
}

/// Something that delivers pushes: APNs, FCM, Huawei Push Kit, or the file sink. A provider returns
/// one outcome per push, in order; it never throws, because every push must end with a recorded
/// outcome.
public protocol PushProvider: Sendable {
    func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord]

    /// The provider's name for metrics (`apns`, `fcm`, `huawei`, `web`, `sink`) for pushes on `channel`.
    func name(for channel: OutgoingPush.Channel) -> String

    /// The circuit breaker of pushes on `channel`, if the provider has one.
    func breaker(for channel: OutgoingPush.Channel) -> CircuitBreaker?

    /// How many pushes the provider can usefully have on the network at once (its connections times
    /// their streams); a worker keeps that many in flight, in batches.
    var window: Int { get }
}

extension PushProvider {
    public func name(for channel: OutgoingPush.Channel) -> String { channel.rawValue }
    public func breaker(for channel: OutgoingPush.Channel) -> CircuitBreaker? { nil }
    /// A provider that answers at once has nothing on the network: no window beyond the batches.
    public var window: Int { 0 }
}

/// What a provider makes of one reply.
enum Verdict: Equatable {
    case sent
    /// Final; `deadToken` when the token must not be used again.
    case failed(String, deadToken: Bool)
    /// Transient (5xx, 429, connection trouble): the push is tried again later, no sooner than
    /// `after` seconds when the provider said so; `ambiguous` when the request may have reached it.
    case retry(String, after: Double?, ambiguous: Bool)
    /// The credentials were refused: renew them once and send again.
    case renewCredentials(String)

    /// The verdict on a transport error (status 0).
    static func transportFailure(_ response: HTTP2Response) -> Verdict {
        .retry(response.requestSent ? "ConnectionLost" : "ConnectionError", after: nil, ambiguous: response.requestSent)
    }

    /// `Retry-After` in seconds, when the reply has one.
    static func retryAfter(_ response: HTTP2Response) -> Double? {
        response.headers["retry-after"].flatMap(Double.init).map { max(0, $0) }
    }

    /// The outcome of `push` under this verdict (`renewCredentials` counts as a failure with its reason).
    func record(for push: OutgoingPush) -> DeliveryRecord {
        let device = push.target.deviceID
        switch self {
        case .sent: return DeliveryRecord(deviceID: device, outcome: .sent)
        case .failed(let reason, let dead):
            return DeliveryRecord(deviceID: device, outcome: .failed, reason: reason, deadToken: dead ? push.target.pushToken : nil)
        case .retry(let reason, let after, let ambiguous):
            return DeliveryRecord(deviceID: device, outcome: .retrying, reason: reason, retryAfter: after, ambiguous: ambiguous)
        case .renewCredentials(let reason): return DeliveryRecord(deviceID: device, outcome: .failed, reason: reason)
        }
    }
}
