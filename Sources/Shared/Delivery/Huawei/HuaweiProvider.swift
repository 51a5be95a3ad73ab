import Core
import HTTP2

/// Delivers to Huawei Push Kit (`POST <endpoint>/v1/<app id>/messages:send`), one request per push,
/// many multiplexed. Push Kit answers `{"code", "msg", "requestId"}`; the code decides:
///
/// | Reply | Outcome |
/// |---|---|
/// | 80000000 | sent |
/// | 80300007 (all tokens invalid); 80100000 (partial success) naming the token in `msg`'s `illegal_tokens` | failed, token pruned |
/// | 80200001, 80200003, or HTTP 401 (OAuth token refused or expired) | a new access token, sent once more |
/// | 81000001 (internal error), HTTP 429, 5xx (503 is Push Kit's flow control) | retried, honouring `Retry-After` |
/// | any other code (80100001 parameters, 80100003 message body, 80300008 too large, 80300011 high urgency not granted…) | failed with the code as reason |
public final class HuaweiProvider: Sendable {
    let app: String
    let client: any HTTP2Transport
    let tokens: HuaweiAccessTokens
    let logger: Logger
    /// Pushes on the network at once (`PushProvider.window`).
    public let window: Int

    public init(app: String, client: any HTTP2Transport, tokens: HuaweiAccessTokens, logger: Logger, window: Int) {
        self.app = app
        self.client = client
        self.tokens = tokens
        self.logger = logger
        self.window = window
    }

    static let sent = "80000000"
    static let partialSuccess = "80100000"
    static let tokensInvalid = "80300007"
    static let credentialCodes: Set<String> = ["80200001", "80200003"]
    static let internalError = "81000001"

    /// The verdict on Push Kit's reply to a push to `token`.
    static func verdict(_ response: HTTP2Response, token: String) -> Verdict {
        if response.status == 0 { return .transportFailure(response) }
        let reply = try? JSON.parse(response.body)
        // Push Kit's codes are eight digits; anything else (a proxy's page, an empty code) is not
        // one, so that a reason never carries arbitrary text into the funnel and /metrics.
        let code = reply?["code"].flatMap { $0.stringValue ?? $0.lenientInt.map(String.init) }
            .flatMap { $0.utf8.count == 8 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } ? $0 : nil }
        switch code {
        case sent? where response.status == 200:
            return .sent
        case tokensInvalid?:
            return .failed(tokensInvalid, deadToken: true)
        case partialSuccess?:
            return .failed(partialSuccess, deadToken: illegalTokens(reply?["msg"]).contains(token))
        case let code? where credentialCodes.contains(code):
            return .renewCredentials(code)
        case internalError?:
            return .retry(internalError, after: Verdict.retryAfter(response), ambiguous: false)
        default:
            let reason = code ?? "HTTP\(response.status)"
            if response.status == 401 { return .renewCredentials(reason) }
            if response.status == 429 || response.status >= 500 {
                return .retry(reason, after: Verdict.retryAfter(response), ambiguous: false)
            }
            return .failed(code ?? (response.status == 200 ? "UnreadableReply" : reason), deadToken: false)
        }
    }

    /// The tokens a partial-success `msg` lists as illegal: `msg` is the JSON text of
    /// `{"success", "failure", "illegal_tokens": [...]}`.
    static func illegalTokens(_ message: JSON?) -> Set<String> {
        guard let text = message?.stringValue, let json = try? JSON.parse(Array(text.utf8)) else { return [] }
        return Set((json["illegal_tokens"]?.arrayValue ?? []).compactMap(\.stringValue))
    }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        BearerDelivery.deliver(
            pushes, url: "\(tokens.settings.endpoint)/v1/\(tokens.settings.appID)/messages:send", client: client,
            token: { refused throws(DeliveryError) in try tokens.token(replacing: refused) },
            verdict: { response, push in Self.verdict(response, token: push.target.pushToken) },
            tokenFailed: { error in
                logger.error("cannot get a Huawei access token; check huawei.app_id and huawei.client_secret_file",
                             ["app": app, "error": "\(error)"])
            })
    }
}

extension HuaweiProvider: PushProvider {}
