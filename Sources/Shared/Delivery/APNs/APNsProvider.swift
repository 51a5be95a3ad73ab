import Foundation
import Core
import HTTP2

/// Delivers to APNs over HTTP/2 with token authentication, applying Apple's reply table (summed
/// up in docs/architecture.md, "The path of a campaign"): 410 and bad-token replies kill the token;
/// 429, 5xx and connection trouble are transient (the worker retries them later, honouring
/// `Retry-After`); other 4xx fail at once. A rejected provider token is replaced once, and if APNs
/// still refuses it the app's APNs sending pauses with an ERROR that says what to fix. Every push
/// ends with exactly one outcome.
public final class APNsProvider: Sendable {
    /// How long sending pauses after APNs refused the credentials twice.
    public static let pauseSeconds: Int64 = 60

    let app: String
    let settings: APNsSettings
    let client: any HTTP2Transport
    let tokens: APNsTokenCache
    let clock: any Clock
    let logger: Logger
    /// Pushes on the network at once (`PushProvider.window`).
    public let window: Int
    private let paused = Lock<(until: Int64, reason: String)?>(nil)

    public init(app: String, settings: APNsSettings, client: any HTTP2Transport, tokens: APNsTokenCache, clock: any Clock, logger: Logger, window: Int) {
        self.app = app
        self.settings = settings
        self.client = client
        self.tokens = tokens
        self.clock = clock
        self.logger = logger
        self.window = window
    }

    static func verdict(_ response: HTTP2Response) -> Verdict {
        if response.status == 200 { return .sent }
        if response.status == 0 { return .transportFailure(response) }
        let reason = (try? JSON.parse(response.body))?["reason"]?.stringValue
        switch response.status {
        case 410:
            return .failed(reason ?? "Unregistered", deadToken: true)
        case 400 where reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic":
            return .failed(reason ?? "BadDeviceToken", deadToken: true)
        case 400 where reason == "IdleTimeout":
            // APNs closes an idle connection with this reply to a request it did not process.
            return .retry("IdleTimeout", after: nil, ambiguous: false)
        case 403 where reason == "Forbidden":
            return .failed("Forbidden", deadToken: false)
        case 403:
            return .renewCredentials(reason ?? "Forbidden")
        case 429, 500...599:
            return .retry(reason ?? "HTTP\(response.status)", after: Verdict.retryAfter(response), ambiguous: false)
        default:
            return .failed(reason ?? "HTTP\(response.status)", deadToken: false)
        }
    }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        guard !pushes.isEmpty else { return [] }
        if let pause = paused.withLock({ $0 }), clock.now() < pause.until {
            return pushes.map { DeliveryRecord(deviceID: $0.target.deviceID, outcome: .failed, reason: pause.reason) }
        }
        var outcomes = [DeliveryRecord?](repeating: nil, count: pushes.count)
        var pending = Array(pushes.indices)
        var renewed = false
        let headers = PayloadBuilder.apnsHeaders(message.spec, now: clock.now())
        while !pending.isEmpty {
            let token: String
            do {
                token = try tokens.token()
            } catch {
                logger.error("cannot sign the APNs provider token; check apns.key_path", ["app": app, "error": "\(error)"])
                for index in pending { outcomes[index] = DeliveryRecord(deviceID: pushes[index].target.deviceID, outcome: .failed, reason: "ProviderTokenError") }
                break
            }
            let common = commonHeaders(headers, token: token)
            let responses = client.send(pending.map { request(pushes[$0], message: message, common: common) })
            var refused: [Int] = []
            var refusedAgain: String?
            for (index, response) in zip(pending, responses) {
                let verdict = Self.verdict(response)
                switch verdict {
                case .renewCredentials where !renewed:
                    refused.append(index)
                    continue
                case .renewCredentials(let reason):
                    refusedAgain = reason
                case .failed(let reason, deadToken: true):
                    logger.debug("APNs token is dead", ["apns.reason": reason, "push_token": Redact.token(pushes[index].target.pushToken)])
                default:
                    break
                }
                outcomes[index] = verdict.record(for: pushes[index])
            }
            if let refusedAgain { pause(refusedAgain) }
            guard !refused.isEmpty else { break }
            renewed = true
            _ = try? tokens.replace(token)
            pending = refused
        }
        return pushes.indices.map { outcomes[$0] ?? DeliveryRecord(deviceID: pushes[$0].target.deviceID, outcome: .failed, reason: "Unknown") }
    }

    private func pause(_ reason: String) {
        paused.withLock { $0 = (clock.now() + Self.pauseSeconds, reason) }
        logger.error("APNs refused the provider token twice; APNs sending for this app is paused for \(Self.pauseSeconds) s. "
                     + "Check apns.team_id, apns.key_id and apns.key_path (the .p8 key of that key id, from the same team) and apns.topic",
                     ["app": app, "apns.reason": reason])
    }

    /// The headers every push of a batch shares.
    func commonHeaders(_ headers: PayloadBuilder.APNsHeaders, token: String) -> HTTP2HeaderList {
        var lines = [
            "authorization: bearer \(token)", "apns-topic: \(settings.topic)\(headers.topicSuffix)", "apns-push-type: \(headers.pushType)",
            "apns-priority: \(headers.priority)", "content-type: application/json",
        ]
        if let expiration = headers.expiration { lines.append("apns-expiration: \(expiration)") }
        if let collapse = headers.collapseID { lines.append("apns-collapse-id: \(collapse)") }
        return HTTP2HeaderList(lines)
    }

    func request(_ push: OutgoingPush, message: ShardWork, common: HTTP2HeaderList) -> HTTP2Request {
        let base = push.target.gateway == "sandbox" ? settings.sandboxURL : settings.productionURL
        return HTTP2Request(url: base + "/3/device/" + push.target.pushToken,
                            headers: ["apns-id: " + Self.apnsID(message: message.messageID, device: push.target.deviceID)],
                            sharedHeaders: common, body: push.body)
    }

    /// A stable `apns-id` per (message, device), so that a retried push carries the same id: a
    /// version-4-shaped UUID of the message id's low 48 bits and the device id's low 60 bits.
    static func apnsID(message: Int64, device: Int64) -> String {
        let m = UInt64(bitPattern: message), d = UInt64(bitPattern: device)
        return String(unsafeUninitializedCapacity: 36) { text in
            var end = 0
            func put(_ value: UInt64, digits: Int, dash: Bool = true) {
                for shift in stride(from: 4 * (digits - 1), through: 0, by: -4) {
                    let nibble = UInt8((value >> UInt64(shift)) & 0xF)
                    text[end] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                    end += 1
                }
                if dash {
                    text[end] = UInt8(ascii: "-")
                    end += 1
                }
            }
            put(m & 0xFFFF_FFFF, digits: 8)
            put((m >> 32) & 0xFFFF, digits: 4)
            put(0x4000 | (d >> 48) & 0xFFF, digits: 4)
            put(0x8000 | (d >> 36) & 0xFFF, digits: 4)
            put(d & 0xF_FFFF_FFFF, digits: 12, dash: false)
            return end
        }
    }
}
