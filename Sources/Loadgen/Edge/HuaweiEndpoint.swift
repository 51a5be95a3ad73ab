import Core
import Foundation
import HTTP2Server

/// Huawei Push Kit (`POST /v1/<app id>/messages:send`) and its OAuth 2.0 token endpoint
/// (`POST /oauth2/v3/token`, client credentials) on the FCM port: a token is issued only for the
/// edge's app ID and client secret, a send needs one, and a message is checked for the shape Push
/// Kit accepts. Replies are Push Kit's `{"code", "msg", "requestId"}`.
final class HuaweiEndpoint: Sendable {
    static let tokenPath = "/oauth2/v3/token"
    static let messageFields: Set<String> = ["data", "notification", "android", "apns", "webpush", "token", "topic", "condition"]
    static let androidFields: Set<String> = ["collapse_key", "urgency", "category", "ttl", "bi_tag", "receipt_id", "fast_app_target",
                                             "data", "notification"]
    static let maxDataBytes = 4096

    let appID: String
    let clientSecret: String
    let deadTokens: Set<String>
    private let issued = IssuedTokens()

    init(appID: String, clientSecret: String, deadTokens: Set<String>) {
        self.appID = appID
        self.clientSecret = clientSecret
        self.deadTokens = deadTokens
    }

    /// A refused send: HTTP status and Push Kit's result code and message.
    struct Refusal: Error {
        let status: Int
        let code: String
        let message: String

        static func parameters() -> Refusal { Refusal(status: 400, code: "80100001", message: "Some request parameters are incorrect.") }
        static func structure() -> Refusal { Refusal(status: 400, code: "80100003", message: "Incorrect message structure.") }

        var response: HTTP2Response { HuaweiEndpoint.reply(status: status, code: code, message: message) }
    }

    static func reply(status: Int, code: String, message: String) -> HTTP2Response {
        let body: JSON = ["code": .string(code), "msg": .string(message), "requestId": .string(String(UInt64.random(in: 1...UInt64.max)))]
        return HTTP2Response(status: status, headers: [("content-type", "application/json;charset=UTF-8")], body: body.encoded())
    }

    // MARK: OAuth token endpoint

    func isTokenRequest(_ request: HTTP2Request) -> Bool { request.path.split(separator: "?").first.map(String.init) == Self.tokenPath }

    /// Whether `request` is for `messages:send` (FCM's paths start `/v1/projects/`).
    static func isSend(_ request: HTTP2Request) -> Bool { request.path.hasPrefix("/v1/") && !request.path.hasPrefix("/v1/projects/") }

    /// Answers a token request: an access token, or Huawei's OAuth error. Returns the refusal too.
    func token(_ request: HTTP2Request, now: Int64) -> (HTTP2Response, refusal: String?) {
        let form = FCMEndpoint.form(request.body)
        let refusal: (error: Int, subError: Int, description: String)?
        if request.method != "POST" || form["grant_type"] != "client_credentials" {
            refusal = (1101, 20001, "invalid request")
        } else if form["client_id"] != appID {
            refusal = (1102, 20003, "invalid client_id")
        } else if form["client_secret"] != clientSecret {
            refusal = (1101, 20058, "invalid client_secret")
        } else {
            refusal = nil
        }
        let headers: [(name: String, value: String)] = [("content-type", "application/json;charset=UTF-8")]
        if let refusal {
            let body: JSON = ["error": .int(Int64(refusal.error)), "sub_error": .int(Int64(refusal.subError)),
                              "error_description": .string(refusal.description)]
            return (HTTP2Response(status: 400, headers: headers, body: body.encoded()), "\(refusal.error)/\(refusal.subError)")
        }
        let token = issued.issue(prefix: "CV6.edge.", now: now)
        let body: JSON = ["access_token": .string(token), "expires_in": .int(IssuedTokens.lifetime), "token_type": "Bearer"]
        return (HTTP2Response(status: 200, headers: headers, body: body.encoded()), nil)
    }

    // MARK: messages:send

    /// Checks a send; returns the accepted message's token and its `data` map (for the devices' reports).
    func send(_ request: HTTP2Request, now: Int64) throws(Refusal) -> (token: String, data: JSON) {
        let path = request.path.split(separator: "?").first.map(String.init) ?? ""
        guard request.method == "POST", path.hasSuffix("/messages:send") else {
            throw Refusal(status: 404, code: "80100001", message: "Not found.")
        }
        try authenticate(request.header("authorization"), now: now)
        let requested = String(path.dropFirst("/v1/".count).dropLast("/messages:send".count)).removingPercentEncoding ?? ""
        guard requested == appID else {
            throw Refusal(status: 403, code: "80300002", message: "The current app does not have the permission to send messages.")
        }
        guard let body = try? JSON.parse(request.body), case .object(let members) = body,
            members.keys.allSatisfy({ $0 == "message" || $0 == "validate_only" }), case .object(let message)? = members["message"],
            message.keys.allSatisfy(Self.messageFields.contains)
        else { throw Refusal.structure() }
        guard let tokens = message["token"]?.arrayValue, (1...1000).contains(tokens.count) else {
            throw Refusal(status: 400, code: "80300010", message: "The number of tokens in the message body exceeds the default value.")
        }
        guard let token = tokens[0].stringValue, !token.isEmpty, tokens.allSatisfy({ !($0.stringValue ?? "").isEmpty }) else {
            throw Refusal.parameters()
        }
        var data = JSON.object([:])
        if let text = message["data"] {
            guard let string = text.stringValue else { throw Refusal.parameters() }
            guard string.utf8.count <= Self.maxDataBytes else {
                throw Refusal(status: 413, code: "80300008", message: "The message body size exceeds the default value.")
            }
            data = (try? JSON.parse(Array(string.utf8))) ?? .object([:])
        }
        if let android = message["android"] {
            guard case .object(let config) = android, config.keys.allSatisfy(Self.androidFields.contains) else { throw Refusal.structure() }
            if let urgency = config["urgency"], !["HIGH", "NORMAL"].contains(urgency.stringValue ?? "") { throw Refusal.parameters() }
            if let ttl = config["ttl"], !Self.isTTL(ttl.stringValue ?? "") { throw Refusal.parameters() }
        }
        if deadTokens.contains(token) { throw Refusal(status: 400, code: "80300007", message: "All the tokens are invalid.") }
        return (token, data)
    }

    private func authenticate(_ authorization: String?, now: Int64) throws(Refusal) {
        let token = authorization.map { $0.lowercased().hasPrefix("bearer ") ? String($0.dropFirst(7)) : "" } ?? ""
        guard let expiry = issued.expiry(of: token) else {
            throw Refusal(status: 401, code: "80200001", message: "Oauth authentication error.")
        }
        guard expiry > now else { throw Refusal(status: 401, code: "80200003", message: "Oauth Token expired.") }
    }

    /// Seconds as Push Kit takes them: `600`, `600s`, `3.5s`.
    static func isTTL(_ text: String) -> Bool {
        let number = text.hasSuffix("s") || text.hasSuffix("S") ? text.dropLast() : Substring(text)
        return !number.isEmpty && Double(number) != nil && number.allSatisfy { $0.isASCIIDigit || $0 == "." }
    }
}
