import Core
import HTTP2
import WebPush

/// Delivers to browsers through their push services (RFC 8030): one `POST` to each subscription's
/// endpoint, its payload encrypted for that subscription (RFC 8291, `Content-Encoding: aes128gcm`)
/// and authorized with a VAPID token for the endpoint's origin (RFC 8292), with `TTL`, `Urgency` and
/// `Topic` from the message. The transport keeps connections per push-service origin, over HTTP/2
/// or, where the push service does not select `h2`, HTTP/1.1 (`HTTP2ClientSettings.offersHTTP1`);
/// the replies below mean the same over both.
///
/// Replies: 201 (any 2xx) is sent; 404 and 410 mean the subscription is gone (the token is pruned);
/// 413 fails (the payload is too large for that service); 429 and 5xx are transient (retried later,
/// honouring `Retry-After`); 401 means the VAPID token was refused: it is signed anew once and the
/// push sent again; 403 means the push service refuses the VAPID key itself (the subscription was
/// made with another `applicationServerKey`), and fails; other 4xx fail with their status. An
/// endpoint whose host resolves to an address of this host or a private network, which the
/// transport refuses to connect to unless `web.allow_private_endpoints`, is a dead subscription
/// (`PrivateEndpoint`). Every push ends with exactly one outcome.
public final class WebPushProvider: Sendable {
    let app: String
    let client: any HTTP2Transport
    let vapid: VAPIDTokens
    let defaultTTL: Int64
    let logger: Logger
    /// Pushes on the network at once (`PushProvider.window`).
    public let window: Int

    public init(app: String, client: any HTTP2Transport, vapid: VAPIDTokens, defaultTTL: Int64, logger: Logger, window: Int) {
        self.app = app
        self.client = client
        self.vapid = vapid
        self.defaultTTL = defaultTTL
        self.logger = logger
        self.window = window
    }

    static func verdict(_ response: HTTP2Response) -> Verdict {
        switch response.status {
        case 0 where response.addressRefused: return .failed("PrivateEndpoint", deadToken: true)
        case 0: return .transportFailure(response)
        case 200...299: return .sent
        case 404: return .failed("NotFound", deadToken: true)
        case 410: return .failed("Gone", deadToken: true)
        case 413: return .failed("PayloadTooLarge", deadToken: false)
        case 401: return .renewCredentials("VAPIDTokenRejected")
        case 403: return .failed("VAPIDKeyRejected", deadToken: false)
        case 400: return .failed("BadRequest", deadToken: false)
        case 429: return .retry("TooManyRequests", after: Verdict.retryAfter(response), ambiguous: false)
        case 500...599: return .retry("HTTP\(response.status)", after: Verdict.retryAfter(response), ambiguous: false)
        default: return .failed("HTTP\(response.status)", deadToken: false)
        }
    }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        guard !pushes.isEmpty else { return [] }
        var outcomes = [DeliveryRecord?](repeating: nil, count: pushes.count)
        var ready: [Ready] = []
        let bodies = Self.encrypt(pushes)
        for (index, push) in pushes.enumerated() {
            guard let subscription = push.subscription, let origin = WebSubscription.origin(of: subscription.endpoint),
                  let body = bodies[index] else {
                outcomes[index] = Verdict.failed("NoSubscriptionKeys", deadToken: false).record(for: push)
                continue
            }
            switch body {
            case .success(let body):
                ready.append(Ready(index: index, endpoint: subscription.endpoint, origin: origin, body: body))
            case .failure(let error):
                logger.warning("cannot encrypt a Web Push payload", ["app": app, "error": "\(error)"])
                outcomes[index] = Verdict.failed("EncryptionFailed", deadToken: false).record(for: push)
            }
        }
        let headers = PayloadBuilder.webHeaders(message.spec, defaultTTL: defaultTTL)
        var pending = ready
        var renewed = false
        while !pending.isEmpty {
            var shared: [String: (token: String, headers: HTTP2HeaderList)] = [:]
            // Origins whose token could not be signed: tried and logged once per pass.
            var unsigned: Set<String> = []
            var sendable: [Ready] = []
            for item in pending {
                if shared[item.origin] == nil, !unsigned.contains(item.origin) {
                    do {
                        let authorization = try vapid.authorization(origin: item.origin)
                        shared[item.origin] = (authorization, commonHeaders(headers, authorization: authorization))
                    } catch {
                        unsigned.insert(item.origin)
                        logger.error("cannot sign the VAPID token; check web.vapid_private_key_file",
                                     ["app": app, "origin": item.origin, "error": "\(error)"])
                    }
                }
                if shared[item.origin] != nil {
                    sendable.append(item)
                } else {
                    outcomes[item.index] = Verdict.failed("VAPIDTokenError", deadToken: false).record(for: pushes[item.index])
                }
            }
            let responses = client.send(sendable.map { item in
                HTTP2Request(url: item.endpoint, sharedHeaders: shared[item.origin]?.headers, body: item.body)
            })
            var refused: [Ready] = []
            var refusingOrigins: Set<String> = []
            // Origins refused for their address, with the transport's reason (which names it).
            var privateOrigins: [String: String] = [:]
            for (item, response) in zip(sendable, responses) {
                let verdict = Self.verdict(response)
                switch verdict {
                case .renewCredentials where !renewed:
                    refused.append(item)
                    continue
                case .failed("VAPIDKeyRejected", _), .renewCredentials:
                    refusingOrigins.insert(item.origin)
                case .failed("PrivateEndpoint", _):
                    privateOrigins[item.origin] = response.transportError ?? ""
                case .failed(let reason, deadToken: true):
                    logger.debug("Web Push subscription is gone", ["web.reason": reason, "push_token": Redact.token(pushes[item.index].target.pushToken)])
                default:
                    break
                }
                outcomes[item.index] = verdict.record(for: pushes[item.index])
            }
            for origin in refusingOrigins.sorted() {
                logger.error("a push service refused the VAPID credentials: the browsers subscribed with another applicationServerKey "
                             + "than the public key of web.vapid_private_key_file, or the service refuses web.subject",
                             ["app": app, "web.origin": origin])
            }
            for (origin, reason) in privateOrigins.sorted(by: { $0.key < $1.key }) {
                logger.warning("a Web Push endpoint is on this host or a private network: its subscriptions are refused "
                               + "(web.allow_private_endpoints)", ["app": app, "web.origin": origin, "error": reason])
            }
            guard !refused.isEmpty else { break }
            renewed = true
            for origin in Set(refused.map(\.origin)) {
                if let token = shared[origin]?.token { vapid.discard(authorization: token, origin: origin) }
            }
            pending = refused
        }
        return pushes.indices.map { outcomes[$0] ?? DeliveryRecord(deviceID: pushes[$0].target.deviceID, outcome: .failed, reason: "Unknown") }
    }

    /// A push encrypted for its subscription, ready to go.
    struct Ready {
        let index: Int
        let endpoint: String
        /// The push service (`https://host[:port]`): the VAPID token's audience.
        let origin: String
        let body: [UInt8]
    }

    /// The headers every push of a batch to one origin shares.
    func commonHeaders(_ headers: PayloadBuilder.WebHeaders, authorization: String) -> HTTP2HeaderList {
        var lines = ["authorization: \(authorization)", "ttl: \(headers.ttl)", "content-encoding: aes128gcm",
                     "content-type: application/octet-stream"]
        if let urgency = headers.urgency { lines.append("urgency: \(urgency)") }
        if let topic = headers.topic { lines.append("topic: \(topic)") }
        return HTTP2HeaderList(lines)
    }
}
