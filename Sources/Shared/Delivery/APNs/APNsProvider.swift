import Foundation
import Synchronization
import Core
import HTTP2

/// Delivers to APNs over HTTP/2 with token authentication, applying Apple's reply table (summed
/// up in docs/architecture.md, "The path of a campaign"): 410 and bad-token replies kill the token;
/// 429 `TooManyRequests` backs that device off and retries; 5xx and broken connections retry on a fresh connection; a rejected provider
/// token is replaced once, and if APNs still refuses it the app's APNs sending pauses with an ERROR
/// that says what to fix. Every push ends with exactly one outcome.
public final class APNsProvider: Sendable {
    /// Attempts per push before it is recorded as failed with the last reason.
    public static let maxAttempts = 4
    /// How long sending pauses after APNs refused the credentials twice.
    public static let pauseSeconds: Int64 = 60

    let app: String
    let settings: APNsSettings
    let client: any HTTP2Transport
    let tokens: APNsTokenCache
    let clock: any Clock
    let logger: Logger
    /// Initial retry delay in seconds (doubled per attempt); tests shorten it.
    let backoff: Double
    private let paused = Mutex<(until: Int64, reason: String)?>(nil)

    public init(app: String, settings: APNsSettings, client: any HTTP2Transport, tokens: APNsTokenCache, clock: any Clock, logger: Logger,
                backoff: Double = 0.5) {
        self.app = app
        self.settings = settings
        self.client = client
        self.tokens = tokens
        self.clock = clock
        self.logger = logger
        self.backoff = backoff
    }

    /// What to do with one reply.
    enum Verdict: Equatable {
        case sent
        /// Final failure; `deadToken` when the token must not be used again.
        case failed(String, deadToken: Bool)
        /// Try again after `delay` seconds, on a fresh connection if `fresh`.
        case retry(String, delay: Double, fresh: Bool)
        /// The provider token was refused.
        case credentials(String)
    }

    static func verdict(_ response: HTTP2Response, attempt: Int, backoff: Double) -> Verdict {
        if response.status == 200 { return .sent }
        let reason = (try? JSON.parse(response.body))?["reason"]?.stringValue
        let grow = backoff * pow(2, Double(attempt))
        switch response.status {
        case 0:
            return .retry("ConnectionError", delay: grow, fresh: true)
        case 410:
            return .failed(reason ?? "Unregistered", deadToken: true)
        case 400 where reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic":
            return .failed(reason ?? "BadDeviceToken", deadToken: true)
        case 400 where reason == "IdleTimeout":
            return .retry("IdleTimeout", delay: 0, fresh: true)
        case 403 where reason == "Forbidden":
            return .failed("Forbidden", deadToken: false)
        case 403:
            return .credentials(reason ?? "Forbidden")
        case 429 where reason == "TooManyProviderTokenUpdates":
            return .retry("TooManyProviderTokenUpdates", delay: max(1, grow * 2), fresh: false)
        case 429:
            return .retry(reason ?? "TooManyRequests", delay: max(1, grow * 2), fresh: false)
        case 500...599:
            return .retry(reason ?? "HTTP\(response.status)", delay: grow, fresh: true)
        default:
            return .failed(reason ?? "HTTP\(response.status)", deadToken: false)
        }
    }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        guard !pushes.isEmpty else { return [] }
        if let pause = paused.withLock({ $0 }), clock.now() < pause.until {
            return pushes.map { DeliveryRecord(deviceID: $0.target.deviceID, outcome: .failed, reason: pause.reason) }
        }
        var rounds = DeliveryRounds(pushes)
        var replacedAt: Int?
        let headers = PayloadBuilder.apnsHeaders(message.spec, now: clock.now())
        for attempt in 0..<Self.maxAttempts where !rounds.pending.isEmpty {
            let token: String
            do {
                token = try tokens.token()
            } catch {
                logger.error("cannot sign the APNs provider token; check apns.key_path", ["app": app, "error": "\(error)"])
                rounds.failWaiting(reason: "ProviderTokenError")
                return rounds.result()
            }
            let common = commonHeaders(headers, token: token)
            let fresh = rounds.takeFresh()
            let responses = client.send(rounds.pending.map { request(pushes[$0], message: message, common: common, fresh: fresh) })
            var credentialFault: String?
            for (index, response) in zip(rounds.pending, responses) {
                switch Self.verdict(response, attempt: attempt, backoff: backoff) {
                case .sent:
                    rounds.sent(index)
                case .failed(let reason, let dead):
                    rounds.failed(index, reason: reason, deadToken: dead)
                    if dead {
                        logger.debug("APNs token is dead", ["apns.reason": reason, "push_token": Redact.token(pushes[index].target.pushToken)])
                    }
                case .retry(let reason, let wait, let newConnection):
                    rounds.retry(index, reason: reason, after: wait, fresh: newConnection)
                case .credentials(let reason):
                    rounds.retry(index, reason: reason)
                    if replacedAt == nil {
                        replacedAt = attempt
                        _ = try? tokens.replace(token)
                        rounds.useFreshConnection()
                    } else if replacedAt != attempt {
                        credentialFault = reason
                    }
                }
            }
            if let credentialFault {
                pause(credentialFault)
                return rounds.result()
            }
            rounds.endRound(last: attempt + 1 == Self.maxAttempts)
        }
        return rounds.result()
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
            "authorization: bearer \(token)", "apns-topic: \(settings.topic)", "apns-push-type: \(headers.pushType)",
            "apns-priority: \(headers.priority)", "content-type: application/json",
        ]
        if let expiration = headers.expiration { lines.append("apns-expiration: \(expiration)") }
        if let collapse = headers.collapseID { lines.append("apns-collapse-id: \(collapse)") }
        return HTTP2HeaderList(lines)
    }

    func request(_ push: OutgoingPush, message: ShardWork, common: HTTP2HeaderList, fresh: Bool) -> HTTP2Request {
        let base = push.target.gateway == "sandbox" ? settings.sandboxURL : settings.productionURL
        return HTTP2Request(url: base + "/3/device/" + push.target.pushToken,
                            headers: ["apns-id: " + Self.apnsID(message: message.messageID, device: push.target.deviceID)],
                            sharedHeaders: common, body: push.body, freshConnection: fresh)
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
