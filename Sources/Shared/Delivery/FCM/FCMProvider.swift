import Foundation
import Core
import HTTP2

/// Delivers to FCM HTTP v1 (`POST <endpoint>/v1/projects/<project>/messages:send`), one request per
/// push, many multiplexed. Errors are read from `FcmError.errorCode`: UNREGISTERED and
/// SENDER_ID_MISMATCH kill the token; QUOTA_EXCEEDED, UNAVAILABLE, INTERNAL, other 5xx and connection
/// trouble are transient (retried later by the worker, honouring `Retry-After`); INVALID_ARGUMENT
/// fails without pruning; a refused access token is replaced once.
public final class FCMProvider: Sendable {
    let app: String
    let settings: FCMSettings
    let client: any HTTP2Transport
    let tokens: FCMAccessTokens
    let logger: Logger
    /// Pushes on the network at once (`PushProvider.window`).
    public let window: Int

    public init(app: String, settings: FCMSettings, client: any HTTP2Transport, tokens: FCMAccessTokens, logger: Logger, window: Int) {
        self.app = app
        self.settings = settings
        self.client = client
        self.tokens = tokens
        self.logger = logger
        self.window = window
    }

    /// The `FcmError.errorCode` of an error body, else its `error.status`.
    static func errorCode(_ body: [UInt8]) -> String? {
        guard let error = (try? JSON.parse(body))?["error"] else { return nil }
        for detail in error["details"]?.arrayValue ?? [] {
            if detail["@type"]?.stringValue?.hasSuffix("FcmError") == true, let code = detail["errorCode"]?.stringValue { return code }
        }
        return error["status"]?.stringValue
    }

    static func verdict(_ response: HTTP2Response) -> Verdict {
        switch response.status {
        case 200: return .sent
        case 0: return .transportFailure(response)
        default: break
        }
        let code = errorCode(response.body)
        switch code {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return .failed(code!, deadToken: true)
        case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL":
            return .retry(code!, after: Verdict.retryAfter(response), ambiguous: false)
        case "UNAUTHENTICATED" where response.status == 401, nil where response.status == 401:
            return .renewCredentials("UNAUTHENTICATED")
        default:
            if response.status == 429 || response.status >= 500 {
                return .retry(code ?? "HTTP\(response.status)", after: Verdict.retryAfter(response), ambiguous: false)
            }
            return .failed(code ?? "HTTP\(response.status)", deadToken: false)
        }
    }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        BearerDelivery.deliver(
            pushes, url: "\(settings.endpoint)/v1/projects/\(tokens.account.projectID)/messages:send", client: client,
            token: { refused throws(DeliveryError) in try tokens.token(replacing: refused) },
            verdict: { response, _ in Self.verdict(response) },
            tokenFailed: { error in
                logger.error("cannot get an FCM access token; check fcm.service_account_path", ["app": app, "error": "\(error)"])
            })
    }
}

extension APNsProvider: PushProvider {}
extension FCMProvider: PushProvider {}
extension WebPushProvider: PushProvider {}

/// Sends each push through the provider of its channel (APNs, FCM, Huawei Push Kit, Web Push),
/// keeping the order of outcomes; holds a circuit breaker for each configured one. A push whose
/// channel has no provider fails with `APNsNotConfigured`, `FCMNotConfigured`,
/// `HuaweiNotConfigured` or `WebPushNotConfigured`.
public struct ChannelRouter: PushProvider {
    let providers: [OutgoingPush.Channel: any PushProvider]
    let breakers: [OutgoingPush.Channel: CircuitBreaker]

    public init(app: String, providers: [OutgoingPush.Channel: any PushProvider]) {
        self.providers = providers
        var breakers: [OutgoingPush.Channel: CircuitBreaker] = [:]
        for channel in providers.keys { breakers[channel] = CircuitBreaker(provider: channel.rawValue, app: app) }
        self.breakers = breakers
    }

    public func breaker(for channel: OutgoingPush.Channel) -> CircuitBreaker? { breakers[channel] }

    /// The widest of the windows: a batch holds pushes of any channel.
    public var window: Int { providers.values.map(\.window).max() ?? 0 }

    /// The reason of a push whose channel has no provider.
    static func notConfigured(_ channel: OutgoingPush.Channel) -> String {
        switch channel {
        case .apns: return "APNsNotConfigured"
        case .fcm: return "FCMNotConfigured"
        case .huawei: return "HuaweiNotConfigured"
        case .web: return "WebPushNotConfigured"
        }
    }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        var outcomes = [DeliveryRecord?](repeating: nil, count: pushes.count)
        for channel in OutgoingPush.Channel.allCases {
            let indices = pushes.indices.filter { pushes[$0].channel == channel }
            guard !indices.isEmpty else { continue }
            guard let provider = providers[channel] else {
                for index in indices {
                    outcomes[index] = DeliveryRecord(deviceID: pushes[index].target.deviceID, outcome: .failed,
                                                     reason: Self.notConfigured(channel))
                }
                continue
            }
            for (index, outcome) in zip(indices, provider.deliver(indices.map { pushes[$0] }, message: message)) {
                outcomes[index] = outcome
            }
        }
        return outcomes.map { $0! }
    }
}
