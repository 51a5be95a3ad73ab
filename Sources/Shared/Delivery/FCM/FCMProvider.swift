import Foundation
import Core
import HTTP2

/// Delivers to FCM HTTP v1 (`POST <endpoint>/v1/projects/<project>/messages:send`), one request per
/// push, many multiplexed. Errors are read from `FcmError.errorCode`: UNREGISTERED and
/// SENDER_ID_MISMATCH kill the token; QUOTA_EXCEEDED, UNAVAILABLE and INTERNAL retry honouring
/// `Retry-After`; INVALID_ARGUMENT fails without pruning; a refused access token is replaced once.
public final class FCMProvider: Sendable {
    public static let maxAttempts = 4

    let app: String
    let settings: FCMSettings
    let client: any HTTP2Transport
    let tokens: FCMAccessTokens
    let logger: Logger
    let backoff: Double

    public init(app: String, settings: FCMSettings, client: any HTTP2Transport, tokens: FCMAccessTokens, logger: Logger, backoff: Double = 0.5) {
        self.app = app
        self.settings = settings
        self.client = client
        self.tokens = tokens
        self.logger = logger
        self.backoff = backoff
    }

    enum Verdict: Equatable {
        case sent
        case failed(String, deadToken: Bool)
        case retry(String, delay: Double, fresh: Bool)
        case refreshToken
    }

    /// The `FcmError.errorCode` of an error body, else its `error.status`.
    static func errorCode(_ body: [UInt8]) -> String? {
        guard let error = (try? JSON.parse(body))?["error"] else { return nil }
        for detail in error["details"]?.arrayValue ?? [] {
            if detail["@type"]?.stringValue?.hasSuffix("FcmError") == true, let code = detail["errorCode"]?.stringValue { return code }
        }
        return error["status"]?.stringValue
    }

    static func verdict(_ response: HTTP2Response, attempt: Int, backoff: Double) -> Verdict {
        let grow = backoff * pow(2, Double(attempt))
        let retryAfter = response.headers["retry-after"].flatMap(Double.init)
        switch response.status {
        case 200: return .sent
        case 0: return .retry("ConnectionError", delay: grow, fresh: true)
        default: break
        }
        let code = errorCode(response.body)
        switch code {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return .failed(code!, deadToken: true)
        case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL":
            return .retry(code!, delay: retryAfter ?? max(1, grow * 2), fresh: response.status >= 500)
        case "UNAUTHENTICATED" where response.status == 401, nil where response.status == 401:
            return .refreshToken
        default:
            if response.status >= 500 { return .retry(code ?? "HTTP\(response.status)", delay: retryAfter ?? grow, fresh: true) }
            return .failed(code ?? "HTTP\(response.status)", deadToken: false)
        }
    }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        guard !pushes.isEmpty else { return [] }
        let url = "\(settings.endpoint)/v1/projects/\(tokens.account.projectID)/messages:send"
        var rounds = DeliveryRounds(pushes)
        var refused: String?
        var refreshed = false
        for attempt in 0..<Self.maxAttempts where !rounds.pending.isEmpty {
            let token: String
            do {
                token = try tokens.token(replacing: refused)
            } catch {
                logger.error("cannot get an FCM access token; check fcm.service_account_path", ["app": app, "error": "\(error)"])
                rounds.failWaiting(reason: "AccessTokenError")
                return rounds.result()
            }
            refused = nil
            let fresh = rounds.takeFresh()
            let headers = HTTP2HeaderList(["authorization: Bearer \(token)", "content-type: application/json"])
            let responses = client.send(rounds.pending.map {
                HTTP2Request(url: url, sharedHeaders: headers, body: pushes[$0].body, freshConnection: fresh)
            })
            for (index, response) in zip(rounds.pending, responses) {
                switch Self.verdict(response, attempt: attempt, backoff: backoff) {
                case .sent:
                    rounds.sent(index)
                case .failed(let reason, let dead):
                    rounds.failed(index, reason: reason, deadToken: dead)
                case .retry(let reason, let wait, let newConnection):
                    rounds.retry(index, reason: reason, after: wait, fresh: newConnection)
                case .refreshToken:
                    if refreshed {
                        rounds.failed(index, reason: "UNAUTHENTICATED")
                    } else {
                        rounds.retry(index, reason: "UNAUTHENTICATED")
                        refused = token
                    }
                }
            }
            if refused != nil { refreshed = true }
            rounds.endRound(last: attempt + 1 == Self.maxAttempts)
        }
        return rounds.result()
    }
}

extension APNsProvider: PushProvider {}
extension FCMProvider: PushProvider {}

/// Sends iOS pushes through APNs and Android pushes through FCM, keeping the order of outcomes.
public struct ChannelRouter: PushProvider {
    let apns: (any PushProvider)?
    let fcm: (any PushProvider)?

    public init(apns: (any PushProvider)?, fcm: (any PushProvider)?) {
        self.apns = apns
        self.fcm = fcm
    }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        var outcomes = [DeliveryRecord?](repeating: nil, count: pushes.count)
        for (channel, provider) in [(OutgoingPush.Channel.apns, apns), (.fcm, fcm)] {
            let indices = pushes.indices.filter { pushes[$0].channel == channel }
            guard !indices.isEmpty else { continue }
            guard let provider else {
                for index in indices {
                    outcomes[index] = DeliveryRecord(deviceID: pushes[index].target.deviceID, outcome: .failed,
                                                     reason: channel == .apns ? "APNsNotConfigured" : "FCMNotConfigured")
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
