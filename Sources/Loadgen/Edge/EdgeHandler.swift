import Core
import Foundation
import HTTP2Server

/// Routes the edge's HTTP/2 requests: the APNs listener to `APNsEndpoint`, the Web Push listener to
/// `WebPushEndpoint`, the FCM listener to FCM's or Huawei's token endpoint or `messages:send` (by
/// path); counts every outcome and hands accepted pushes to the reporter.
struct EdgeHandler: HTTP2Handler {
    /// The listeners' order in the server.
    static let apnsListener = 0
    static let fcmListener = 1
    static let webListener = 2

    let apns: APNsEndpoint
    let fcm: FCMEndpoint
    let huawei: HuaweiEndpoint
    let web: WebPushEndpoint
    let stats: EdgeStats
    let reporter: DeviceReporter?

    func respond(to request: HTTP2Request, context: HTTP2ConnectionContext) -> HTTP2Response {
        let clock = Date().timeIntervalSince1970
        let now = Int64(clock)
        let milliseconds = Int64(clock * 1000)
        if context.listener == Self.apnsListener {
            let outcome = apns.handle(request, context: context, now: now)
            stats.push(.apns, accepted: outcome.reason == nil, reason: outcome.reason, now: milliseconds)
            if outcome.reason == nil, let reporter, let token = outcome.deviceToken {
                reporter.accepted(token: token, hash: (try? JSON.parse(request.body))?["p"]?.stringValue)
            }
            return outcome.response
        }
        if context.listener == Self.webListener {
            do {
                let delivery = try web.handle(request, now: now)
                stats.push(.web, accepted: true, reason: nil, now: milliseconds)
                reporter?.accepted(hwid: delivery.hwid, hash: delivery.payload["p"]?.stringValue)
                return WebPushEndpoint.accepted()
            } catch {
                stats.push(.web, accepted: false, reason: error.reason, now: milliseconds)
                return error.response
            }
        }
        if huawei.isTokenRequest(request) {
            let (response, refusal) = huawei.token(request, now: now)
            stats.tokenRequest(.huawei, refusal: refusal)
            return response
        }
        if HuaweiEndpoint.isSend(request) {
            do {
                let (token, data) = try huawei.send(request, now: now)
                stats.push(.huawei, accepted: true, reason: nil, now: milliseconds)
                reporter?.accepted(token: token, hash: data["p"]?.stringValue)
                return HuaweiEndpoint.reply(status: 200, code: "80000000", message: "Success")
            } catch {
                stats.push(.huawei, accepted: false, reason: error.code, now: milliseconds)
                return error.response
            }
        }
        if fcm.isTokenRequest(request) {
            let (response, refusal) = fcm.token(request, now: now)
            stats.tokenRequest(refusal: refusal)
            return response
        }
        do {
            let (token, data) = try fcm.send(request, now: now)
            stats.push(.fcm, accepted: true, reason: nil, now: milliseconds)
            reporter?.accepted(token: token, hash: data["p"]?.stringValue)
            let name = "projects/\(fcm.project)/messages/0:\(milliseconds)\(UInt32.random(in: 0...UInt32.max))"
            return HTTP2Response(status: 200, headers: [("content-type", "application/json; charset=UTF-8")],
                                 body: JSON.object(["name": .string(name)]).encoded())
        } catch {
            stats.push(.fcm, accepted: false, reason: error.tally, now: milliseconds)
            return error.response
        }
    }
}
