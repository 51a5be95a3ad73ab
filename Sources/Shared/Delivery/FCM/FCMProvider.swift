import Foundation

/// Delivers to FCM HTTP v1 (`POST <endpoint>/v1/projects/<project>/messages:send`), one request per
/// push, many multiplexed. Errors are read from `FcmError.errorCode`: UNREGISTERED and
/// SENDER_ID_MISMATCH kill the token; QUOTA_EXCEEDED, UNAVAILABLE and INTERNAL retry honouring
/// `Retry-After`; INVALID_ARGUMENT fails without pruning; a refused access token is replaced once.
public final class FCMProvider: Sendable {
    public static let maxAttempts = 4

    let app: String
    let settings: FCMSettings
    let client: HTTP2Client
    let tokens: FCMAccessTokens
    let logger: Logger
    let backoff: Double

    public init(app: String, settings: FCMSettings, client: HTTP2Client, tokens: FCMAccessTokens, logger: Logger, backoff: Double = 0.5) {
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
        var outcomes = [DeliveryRecord?](repeating: nil, count: pushes.count)
        var lastReason = [String](repeating: "Unknown", count: pushes.count)
        var pending = Array(pushes.indices)
        var fresh = false
        var refused: String?
        var refreshed = false
        for attempt in 0..<Self.maxAttempts where !pending.isEmpty {
            let token: String
            do {
                token = try tokens.token(replacing: refused)
            } catch {
                logger.error("cannot get an FCM access token; check fcm.service_account_path", ["app": app, "error": "\(error)"])
                for index in pending where outcomes[index] == nil {
                    outcomes[index] = DeliveryRecord(deviceID: pushes[index].target.deviceID, outcome: .failed, reason: "AccessTokenError")
                }
                return outcomes.map { $0! }
            }
            refused = nil
            let requests = pending.map {
                HTTP2Request(url: url, headers: ["authorization: Bearer \(token)", "content-type: application/json"],
                             body: pushes[$0].body, freshConnection: fresh)
            }
            let responses = client.send(requests)
            var retry: [Int] = []
            var delay = 0.0
            fresh = false
            for (index, response) in zip(pending, responses) {
                let push = pushes[index]
                switch Self.verdict(response, attempt: attempt, backoff: backoff) {
                case .sent:
                    outcomes[index] = DeliveryRecord(deviceID: push.target.deviceID, outcome: .sent)
                case .failed(let reason, let dead):
                    outcomes[index] = DeliveryRecord(deviceID: push.target.deviceID, outcome: .failed, reason: reason,
                                                     deadToken: dead ? push.target.pushToken : nil)
                case .retry(let reason, let wait, let newConnection):
                    lastReason[index] = reason
                    retry.append(index)
                    delay = max(delay, wait)
                    fresh = fresh || newConnection
                case .refreshToken:
                    lastReason[index] = "UNAUTHENTICATED"
                    if refreshed {
                        outcomes[index] = DeliveryRecord(deviceID: push.target.deviceID, outcome: .failed, reason: "UNAUTHENTICATED")
                    } else {
                        retry.append(index)
                        refused = token
                    }
                }
            }
            if refused != nil { refreshed = true }
            pending = retry
            if !pending.isEmpty, attempt + 1 < Self.maxAttempts, delay > 0 {
                Thread.sleep(forTimeInterval: min(delay, 8))
            }
        }
        for index in pending {
            outcomes[index] = DeliveryRecord(deviceID: pushes[index].target.deviceID, outcome: .failed, reason: lastReason[index])
        }
        return outcomes.map { $0! }
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
