import Core
import Foundation
import HTTP2Server

/// The APNs provider API's checks and answers (`POST /3/device/<token>`), in the order Apple's
/// documented errors imply: request shape, device token, provider token, topic, the token's state,
/// payload. A refused push gets Apple's status and `{"reason": …}`; every answer echoes `apns-id`
/// (or makes one up), as Apple does.
struct APNsEndpoint: Sendable {
    static let pushTypes: Set<String> = ["alert", "background", "location", "voip", "complication", "fileprovider", "mdm",
                                         "liveactivity", "pushtotalk", "widgets", "controls"]
    /// Topics a bundle id also owns (VoIP, complications…).
    static let topicSuffixes = ["", ".voip", ".complication", ".pushkit.fileprovider", ".location-query",
                                ".push-type.liveactivity", ".voip-ptt"]
    static let checkedHeaders: Set<String> = ["authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration",
                                              "apns-collapse-id", "apns-id"]
    /// A connection may change its provider token at most this often (else 429 TooManyProviderTokenUpdates).
    static let tokenUpdateInterval: Int64 = 20 * 60

    let tokens: ProviderTokenCheck
    let topic: String
    let deadTokens: Set<String>

    /// What a connection remembers: the provider token it uses and since when.
    final class ConnectionState {
        var providerToken: String?
        var since: Int64 = 0
    }

    /// The outcome of one push: nil reason means accepted.
    struct Outcome {
        var status: Int
        var reason: String?
        var deviceToken: String?
        var response: HTTP2Response
    }

    func handle(_ request: HTTP2Request, context: HTTP2ConnectionContext, now: Int64) -> Outcome {
        let apnsID = request.header("apns-id").flatMap { UUID(uuidString: $0) != nil ? $0 : nil } ?? UUID().uuidString.lowercased()
        let deviceToken = request.path.hasPrefix("/3/device/") ? String(request.path.dropFirst(10)) : nil
        if let reason = refusal(request, deviceToken: deviceToken, context: context, now: now) {
            let status = Self.status(of: reason)
            var body: JSON = ["reason": .string(reason)]
            if status == 410, case .object(var members) = body {
                members["timestamp"] = .int(now * 1000)
                body = .object(members)
            }
            return Outcome(status: status, reason: reason, deviceToken: deviceToken,
                           response: HTTP2Response(status: status, headers: [("apns-id", apnsID), ("content-type", "application/json")],
                                                   body: body.encoded()))
        }
        return Outcome(status: 200, reason: nil, deviceToken: deviceToken, response: HTTP2Response(status: 200, headers: [("apns-id", apnsID)]))
    }

    /// Apple's reason for refusing `request`, or nil to accept it.
    func refusal(_ request: HTTP2Request, deviceToken: String?, context: HTTP2ConnectionContext, now: Int64) -> String? {
        for name in Self.checkedHeaders where request.count(name) > 1 { return "DuplicateHeaders" }
        if let id = request.header("apns-id"), UUID(uuidString: id) == nil { return "BadMessageId" }
        guard request.method == "POST" else { return "MethodNotAllowed" }
        guard let deviceToken else { return "BadPath" }
        guard let topic = request.header("apns-topic"), !topic.isEmpty else { return "MissingTopic" }
        if let collapse = request.header("apns-collapse-id"), collapse.utf8.count > 64 { return "BadCollapseId" }
        if let expiration = request.header("apns-expiration"), expiration.isEmpty || !expiration.allSatisfy(\.isASCIIDigit) {
            return "BadExpirationDate"
        }
        let priority = request.header("apns-priority")
        if let priority, !["1", "5", "10"].contains(priority) { return "BadPriority" }
        let pushType = request.header("apns-push-type")
        if let pushType, !Self.pushTypes.contains(pushType) { return "InvalidPushType" }
        if pushType == "background", (priority ?? "10") != "5" { return "BadPriority" }
        if deviceToken.isEmpty { return "MissingDeviceToken" }
        guard Self.isDeviceToken(deviceToken) else { return "BadDeviceToken" }
        if let reason = authenticate(request.header("authorization"), context: context, now: now) { return reason }
        guard Self.topicSuffixes.contains(where: { topic == self.topic + $0 }) else { return "TopicDisallowed" }
        if deadTokens.contains(deviceToken) { return "Unregistered" }
        if request.body.isEmpty { return "PayloadEmpty" }
        if request.body.count > (pushType == "voip" ? 5120 : 4096) { return "PayloadTooLarge" }
        return nil
    }

    private func authenticate(_ authorization: String?, context: HTTP2ConnectionContext, now: Int64) -> String? {
        if let reason = tokens.refusal(authorization: authorization, now: now) { return reason }
        let state = (context.attachment as? ConnectionState) ?? ConnectionState()
        context.attachment = state
        let token = authorization.map { String($0.dropFirst(7)) }
        if state.providerToken != token {
            if state.providerToken != nil, now - state.since < Self.tokenUpdateInterval { return "TooManyProviderTokenUpdates" }
            state.providerToken = token
            state.since = now
        }
        return nil
    }

    /// An APNs device token: 32 bytes as 64 hex digits (upper or lower case; Apple reads hex).
    static func isDeviceToken(_ token: String) -> Bool {
        token.utf8.count == 64 && token.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }
    }

    static func status(of reason: String) -> Int {
        switch reason {
        case "MissingProviderToken", "InvalidProviderToken", "ExpiredProviderToken": 403
        case "BadPath": 404
        case "MethodNotAllowed": 405
        case "Unregistered": 410
        case "PayloadTooLarge": 413
        case "TooManyProviderTokenUpdates": 429
        default: 400
        }
    }
}
