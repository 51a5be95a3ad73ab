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
        guard !pushes.isEmpty else { return [] }
        let url = "\(settings.endpoint)/v1/projects/\(tokens.account.projectID)/messages:send"
        var outcomes = [DeliveryRecord?](repeating: nil, count: pushes.count)
        var pending = Array(pushes.indices)
        var refused: String?
        while !pending.isEmpty {
            let token: String
            do {
                token = try tokens.token(replacing: refused)
            } catch {
                // A token endpoint that cannot be reached is transient; one that refuses the account is not.
                logger.error("cannot get an FCM access token; check fcm.service_account_path", ["app": app, "error": "\(error)"])
                let verdict = error.transient ? Verdict.retry("AccessTokenError", after: nil, ambiguous: false)
                    : .failed("AccessTokenError", deadToken: false)
                for index in pending { outcomes[index] = verdict.record(for: pushes[index]) }
                break
            }
            let headers = HTTP2HeaderList(["authorization: Bearer \(token)", "content-type: application/json"])
            let responses = client.send(pending.map { HTTP2Request(url: url, sharedHeaders: headers, body: pushes[$0].body) })
            var again: [Int] = []
            for (index, response) in zip(pending, responses) {
                let verdict = Self.verdict(response)
                if case .renewCredentials = verdict, refused == nil {
                    again.append(index)
                } else {
                    outcomes[index] = verdict.record(for: pushes[index])
                }
            }
            guard !again.isEmpty else { break }
            refused = token
            pending = again
        }
        return pushes.indices.map { outcomes[$0] ?? DeliveryRecord(deviceID: pushes[$0].target.deviceID, outcome: .failed, reason: "Unknown") }
    }
}

extension APNsProvider: PushProvider {}
extension FCMProvider: PushProvider {}
extension WebPushProvider: PushProvider {}

/// Sends iOS pushes through APNs, Android pushes through FCM and browser pushes through Web Push,
/// keeping the order of outcomes; holds a circuit breaker for each one that is configured.
public struct ChannelRouter: PushProvider {
    let providers: [OutgoingPush.Channel: any PushProvider]
    let breakers: [OutgoingPush.Channel: CircuitBreaker]

    public init(app: String, apns: (any PushProvider)?, fcm: (any PushProvider)?, web: (any PushProvider)? = nil) {
        var providers: [OutgoingPush.Channel: any PushProvider] = [:]
        providers[.apns] = apns
        providers[.fcm] = fcm
        providers[.web] = web
        self.providers = providers
        var breakers: [OutgoingPush.Channel: CircuitBreaker] = [:]
        for channel in providers.keys { breakers[channel] = CircuitBreaker(provider: channel.rawValue, app: app) }
        self.breakers = breakers
    }

    public func breaker(for channel: OutgoingPush.Channel) -> CircuitBreaker? { breakers[channel] }

    /// The widest of the windows: a batch holds pushes of any channel.
    public var window: Int { providers.values.map(\.window).max() ?? 1 }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        var outcomes = [DeliveryRecord?](repeating: nil, count: pushes.count)
        for channel in OutgoingPush.Channel.allCases {
            let indices = pushes.indices.filter { pushes[$0].channel == channel }
            guard !indices.isEmpty else { continue }
            guard let provider = providers[channel] else {
                for index in indices {
                    outcomes[index] = DeliveryRecord(deviceID: pushes[index].target.deviceID, outcome: .failed,
                                                     reason: Self.notConfigured[channel])
                }
                continue
            }
            for (index, outcome) in zip(indices, provider.deliver(indices.map { pushes[$0] }, message: message)) {
                outcomes[index] = outcome
            }
        }
        return outcomes.map { $0! }
    }

    /// The reason of a push on a channel the application has no provider for.
    static let notConfigured: [OutgoingPush.Channel: String] = [.apns: "APNsNotConfigured", .fcm: "FCMNotConfigured", .web: "WebPushNotConfigured"]
}
