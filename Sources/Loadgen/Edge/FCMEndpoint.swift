import Core
import Foundation
import HTTP2Server

/// FCM HTTP v1 (`POST /v1/projects/<project>/messages:send`) and Google's OAuth token endpoint on
/// one port: an access token is issued only for a valid service-account assertion, a send needs
/// one, and a message is checked for the shape FCM accepts. Refusals are google.rpc errors with
/// `FcmError` details, as Google sends them.
final class FCMEndpoint: Sendable {
    static let fcmError = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let messageFields: Set<String> = ["name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions",
                                             "token", "topic", "condition"]
    static let androidFields: Set<String> = ["collapse_key", "collapseKey", "priority", "ttl", "restricted_package_name",
                                             "restrictedPackageName", "data", "notification", "fcm_options", "fcmOptions",
                                             "direct_boot_ok", "directBootOk"]

    let assertions: AssertionCheck
    let project: String
    /// The token endpoint's path (from the service account's `token_uri`).
    let tokenPath: String
    let deadTokens: Set<String>
    private let issued = IssuedTokens()

    init(assertions: AssertionCheck, project: String, tokenPath: String, deadTokens: Set<String>) {
        self.assertions = assertions
        self.project = project
        self.tokenPath = tokenPath
        self.deadTokens = deadTokens
    }

    /// A refused send: HTTP status, google.rpc status, message, and the FcmError code (if any).
    struct Refusal: Error {
        let status: Int
        let rpcStatus: String
        let message: String
        let errorCode: String?

        static func invalid(_ message: String) -> Refusal {
            Refusal(status: 400, rpcStatus: "INVALID_ARGUMENT", message: message, errorCode: "INVALID_ARGUMENT")
        }

        /// How `/stats` counts it: the FcmError code, else the google.rpc status.
        var tally: String { errorCode ?? rpcStatus }

        var response: HTTP2Response {
            var error: [String: JSON] = ["code": .int(Int64(status)), "message": .string(message), "status": .string(rpcStatus)]
            if let errorCode { error["details"] = [["@type": .string(FCMEndpoint.fcmError), "errorCode": .string(errorCode)]] }
            var headers: [(name: String, value: String)] = [("content-type", "application/json; charset=UTF-8")]
            if status == 401 { headers.append(("www-authenticate", "Bearer realm=\"https://accounts.google.com/\"")) }
            return HTTP2Response(status: status, headers: headers, body: JSON.object(["error": .object(error)]).encoded())
        }
    }

    // MARK: OAuth token endpoint

    /// Whether `request` is for the token endpoint.
    func isTokenRequest(_ request: HTTP2Request) -> Bool { request.path.split(separator: "?").first.map(String.init) == tokenPath }

    /// Answers a token request: an access token, or Google's OAuth error. Returns the refusal's `error` too.
    func token(_ request: HTTP2Request, now: Int64) -> (HTTP2Response, refusal: String?) {
        let headers: [(name: String, value: String)] = [("content-type", "application/json; charset=utf-8"), ("cache-control", "no-store")]
        do throws(AssertionCheck.Refusal) {
            guard request.method == "POST" else { throw AssertionCheck.Refusal(error: "invalid_request", description: "Token endpoint requires POST") }
            try assertions.check(form: Self.form(request.body), now: now)
        } catch {
            let body: JSON = ["error": .string(error.error), "error_description": .string(error.description)]
            return (HTTP2Response(status: 400, headers: headers, body: body.encoded()), error.error)
        }
        let token = issued.issue(prefix: "ya29.edge.", now: now)
        let body: JSON = ["access_token": .string(token), "expires_in": .int(IssuedTokens.lifetime), "token_type": "Bearer"]
        return (HTTP2Response(status: 200, headers: headers, body: body.encoded()), nil)
    }

    /// `application/x-www-form-urlencoded` fields.
    static func form(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String { text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text) }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }

    // MARK: messages:send

    /// Checks a send; returns the accepted message's token and `data` (for the devices' reports).
    func send(_ request: HTTP2Request, now: Int64) throws(Refusal) -> (token: String, data: [String: JSON]) {
        let path = request.path.split(separator: "?").first.map(String.init) ?? ""
        guard request.method == "POST", path.hasPrefix("/v1/projects/"), path.hasSuffix("/messages:send") else {
            throw Refusal(status: 404, rpcStatus: "NOT_FOUND", message: "Requested entity was not found.", errorCode: nil)
        }
        try authenticate(request.header("authorization"), now: now)
        let requested = String(path.dropFirst("/v1/projects/".count).dropLast("/messages:send".count)).removingPercentEncoding ?? ""
        guard requested == project else {
            throw Refusal(status: 403, rpcStatus: "PERMISSION_DENIED", message: "Permission 'cloudmessaging.messages.create' denied on resource "
                + "'//cloudresourcemanager.googleapis.com/projects/\(requested)' (or it may not exist).", errorCode: nil)
        }
        guard let body = try? JSON.parse(request.body), case .object(let members) = body else {
            throw Refusal.invalid("Invalid JSON payload received. Expected an object.")
        }
        for key in members.keys where !["message", "validate_only", "validateOnly"].contains(key) {
            throw Refusal.invalid("Invalid JSON payload received. Unknown name \"\(key)\": Cannot find field.")
        }
        guard case .object(let message)? = members["message"] else { throw Refusal.invalid("Request contains an invalid argument.") }
        for key in message.keys where !Self.messageFields.contains(key) {
            throw Refusal.invalid("Invalid JSON payload received. Unknown name \"\(key)\" at 'message': Cannot find field.")
        }
        let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
        guard let target = targets.first else { throw Refusal.invalid("Recipient of the message is not set.") }
        guard targets.count == 1 else {
            throw Refusal.invalid("Invalid JSON payload received. Oneof field 'target' is already set. Cannot set '\(targets[1])'")
        }
        guard let value = message[target]?.stringValue, !value.isEmpty else { throw Refusal.invalid("Invalid value at 'message.\(target)' (TYPE_STRING)") }
        guard target == "token" else { throw Refusal.invalid("herald-load edge delivers to registration tokens only, not to a \(target)") }
        guard Self.isRegistrationToken(value) else { throw Refusal.invalid("The registration token is not a valid FCM registration token") }
        let data = message["data"]?.objectValue ?? [:]
        var size = try Self.checkData(message["data"], field: "message.data")
        if let android = message["android"] {
            guard case .object(let config) = android else { throw Refusal.invalid("Invalid value at 'message.android'") }
            for key in config.keys where !Self.androidFields.contains(key) {
                throw Refusal.invalid("Invalid JSON payload received. Unknown name \"\(key)\" at 'message.android': Cannot find field.")
            }
            if let priority = config["priority"], !["NORMAL", "HIGH"].contains(priority.stringValue?.uppercased() ?? "") {
                throw Refusal.invalid("Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), \(priority.text)")
            }
            if let ttl = config["ttl"], !Self.isDuration(ttl.stringValue ?? "") {
                throw Refusal.invalid("Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), \(ttl.text)")
            }
            size += try Self.checkData(config["data"], field: "message.android.data")
        }
        guard size <= 4096 else { throw Refusal.invalid("Android message is too big") }
        if deadTokens.contains(value) {
            throw Refusal(status: 404, rpcStatus: "NOT_FOUND", message: "Requested entity was not found.", errorCode: "UNREGISTERED")
        }
        return (value, data)
    }

    private func authenticate(_ authorization: String?, now: Int64) throws(Refusal) {
        guard let authorization, !authorization.isEmpty else {
            throw Refusal(status: 401, rpcStatus: "UNAUTHENTICATED", message: "Request is missing required authentication credential. "
                + "Expected OAuth 2 access token, login cookie or other valid authentication credential.", errorCode: nil)
        }
        let token = authorization.lowercased().hasPrefix("bearer ") ? String(authorization.dropFirst(7)) : ""
        guard let expiry = issued.expiry(of: token), expiry > now else {
            throw Refusal(status: 401, rpcStatus: "UNAUTHENTICATED", message: "Request had invalid authentication credentials. "
                + "Expected OAuth 2 access token, login cookie or other valid authentication credential.", errorCode: nil)
        }
    }

    /// The size of a `data` map (keys and values), after checking that every value is a string and no
    /// key is reserved.
    static func checkData(_ data: JSON?, field: String) throws(Refusal) -> Int {
        guard let data else { return 0 }
        guard case .object(let map) = data else { throw Refusal.invalid("Invalid value at '\(field)' (type.googleapis.com/google.protobuf.Struct)") }
        var size = 0
        for (key, value) in map {
            guard let text = value.stringValue else { throw Refusal.invalid("Invalid value at '\(field)[\(key)].value' (TYPE_STRING), \(value.text)") }
            let lowered = key.lowercased()
            if lowered == "from" || lowered == "message_type" || lowered.hasPrefix("google") || lowered.hasPrefix("gcm") {
                throw Refusal.invalid("Invalid data payload key: \(key)")
            }
            size += key.utf8.count + text.utf8.count
        }
        return size
    }

    static func isRegistrationToken(_ token: String) -> Bool {
        token.utf8.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95 || byte == 45 || byte == 58 || byte == 46
        }
    }

    /// A protobuf Duration as JSON: `3.5s`, `600s`.
    static func isDuration(_ text: String) -> Bool {
        guard text.hasSuffix("s") else { return false }
        let number = text.dropLast()
        return !number.isEmpty && Double(number) != nil && number.allSatisfy { $0.isASCIIDigit || $0 == "." }
    }
}
