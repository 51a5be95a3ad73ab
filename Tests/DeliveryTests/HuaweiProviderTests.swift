import Foundation
import Synchronization
import Testing
import Core
@testable import Delivery
import HTTP2
import TestSupport

/// A transport that records every request and answers each with `answer`.
final class ScriptedTransport: HTTP2Transport {
    let requests = Mutex<[HTTP2Request]>([])
    let answer: @Sendable (HTTP2Request) -> HTTP2Response

    init(answer: @escaping @Sendable (HTTP2Request) -> HTTP2Response) { self.answer = answer }

    func send(_ batch: [HTTP2Request]) -> [HTTP2Response] {
        requests.withLock { $0 += batch }
        return batch.map(answer)
    }

    func close() {}

    var sent: [HTTP2Request] { requests.withLock { $0 } }
}

@Suite struct HuaweiProviderTests {
    let folder: TemporaryDirectory
    init() throws { folder = try TemporaryDirectory() }

    static func reply(_ status: Int, _ code: String?, msg: String = "m", headers: HTTP2Headers = [:]) -> HTTP2Response {
        var body: [String: JSON] = ["msg": .string(msg), "requestId": "r1"]
        if let code { body["code"] = .string(code) }
        return HTTP2Response(status: status, headers: headers, body: JSON.object(body).encoded(), transportError: nil, requestSent: true)
    }

    func settings(secret: String = "s3cr&t=\n") throws -> HuaweiSettings {
        let path = folder.file("secret")
        try Data(secret.utf8).write(to: URL(fileURLWithPath: path))
        var settings = HuaweiSettings(appID: "104567890", clientSecretPath: path)
        settings.tokenURL = "https://127.0.0.1:1/oauth2/v3/token"
        settings.endpoint = "https://127.0.0.1:2"
        return settings
    }

    @Test func pushKitRepliesMapToActions() {
        func verdict(_ r: HTTP2Response, token: String = "tok-1") -> Verdict { HuaweiProvider.verdict(r, token: token) }
        #expect(verdict(Self.reply(200, "80000000", msg: "Success")) == .sent)
        #expect(verdict(Self.reply(200, "80300007")) == .failed("80300007", deadToken: true))
        let partial = #"{"success":0,"failure":1,"illegal_tokens":["tok-1"]}"#
        #expect(verdict(Self.reply(200, "80100000", msg: partial)) == .failed("80100000", deadToken: true))
        #expect(verdict(Self.reply(200, "80100000", msg: partial), token: "tok-2") == .failed("80100000", deadToken: false))
        #expect(verdict(Self.reply(401, "80200001")) == .renewCredentials("80200001"))
        #expect(verdict(Self.reply(401, "80200003")) == .renewCredentials("80200003"))
        #expect(verdict(Self.reply(401, nil)) == .renewCredentials("HTTP401"))
        #expect(verdict(Self.reply(500, "81000001", headers: ["retry-after": "4"])) == .retry("81000001", after: 4, ambiguous: false))
        #expect(verdict(Self.reply(503, nil, headers: ["retry-after": "2"])) == .retry("HTTP503", after: 2, ambiguous: false))
        #expect(verdict(Self.reply(429, nil)) == .retry("HTTP429", after: nil, ambiguous: false))
        #expect(verdict(Self.reply(502, "80000001")) == .retry("80000001", after: nil, ambiguous: false))
        #expect(verdict(Self.reply(400, "80100003")) == .failed("80100003", deadToken: false))
        #expect(verdict(Self.reply(413, "80300008")) == .failed("80300008", deadToken: false))
        #expect(verdict(Self.reply(200, "80300011")) == .failed("80300011", deadToken: false))
        // A code that is not Push Kit's eight digits (a proxy's reply) never becomes a reason.
        #expect(verdict(Self.reply(503, "")) == .retry("HTTP503", after: nil, ambiguous: false))
        #expect(verdict(Self.reply(502, String(repeating: "x", count: 300))) == .retry("HTTP502", after: nil, ambiguous: false))
        #expect(verdict(Self.reply(200, "8000000x")) == .failed("UnreadableReply", deadToken: false))
        #expect(verdict(HTTP2Response(status: 200, headers: [:], body: Array("<html>".utf8), transportError: nil, requestSent: true))
                == .failed("UnreadableReply", deadToken: false))
        #expect(verdict(HTTP2Response(status: 0, headers: [:], body: [], transportError: "reset", requestSent: true))
                == .retry("ConnectionLost", after: nil, ambiguous: true))
    }

    @Test func theRequestBodyCarriesTheAndroidDataMapAsJSONText() throws {
        var spec = MessageSpec(content: ["default": "Hello", "de": "Hallo"])
        spec.title = ["default": "Shop"]
        spec.link = "https://example.com/sale"
        spec.android.ttl = 3_000_000
        spec.android.rootParams = ["campaign": "spring"]
        let inbox = PayloadBuilder.InboxLink(code: "ABCD-1234", expiresAt: 1_700_000_000, image: nil)
        let body = PayloadBuilder.huawei(spec, hash: "h1", token: "tok-1", language: "de", inbox: inbox)
        #expect(body["validate_only"] == false)
        let message = try #require(body["message"])
        #expect(message["token"] == ["tok-1"])
        #expect(message["android"] == ["urgency": "NORMAL", "ttl": "1296000s"])
        let dataText = try #require(message["data"]?.stringValue)
        let data = try JSON.parse(Array(dataText.utf8))
        // The same map the FCM path sends, so the SDK's Huawei module reads the same keys.
        let fcmData = PayloadBuilder.fcm(spec, hash: "h1", token: "tok-1", language: "de", badge: 0, inbox: inbox)["message"]?["data"]
        #expect(data == fcmData)
        #expect(data["pw_msg"] == "1" && data["p"] == "h1" && data["title"] == "Hallo" && data["header"] == "Shop")
        #expect(data["l"] == "https://example.com/sale" && data["campaign"] == "spring" && data["pw_inbox"] == "ABCD-1234")

        spec.android.priority = 2
        spec.android.ttl = nil
        #expect(PayloadBuilder.huawei(spec, hash: "h1", token: "t", language: nil)["message"]?["android"] == ["urgency": "HIGH"])
    }

    @Test func aMessageForHuaweiDevicesIsRefusedWhenItsDataCannotFit() throws {
        var spec = MessageSpec(content: ["default": "Hi"])
        spec.android.rootParams = ["big": .string(String(repeating: "x", count: 4_100))]
        spec.platforms = [Platform.huawei]
        let error = try #require(PayloadBuilder.sizeCheck(spec))
        #expect(error.hasPrefix("Huawei Push Kit data of "), "\(error)")
        spec.platforms = [Platform.huawei, Platform.android]
        #expect(PayloadBuilder.sizeCheck(spec)?.hasPrefix("FCM data of ") == true)
        spec.platforms = [Platform.iOS]
        #expect(PayloadBuilder.sizeCheck(spec) == nil)
    }

    @Test func clientCredentialsAreExchangedOnceAndRenewedWhenRefused() throws {
        let issued = Atomic<Int>(0)
        let transport = ScriptedTransport { _ in
            let n = issued.add(1, ordering: .relaxed).newValue
            return HTTP2Response(status: 200, headers: [:], body: JSON.object([
                "access_token": .string("at-\(n)"), "expires_in": 3600, "token_type": "Bearer",
            ]).encoded(), transportError: nil, requestSent: true)
        }
        let clock = ManualClock(1_000_000)
        let tokens = try HuaweiAccessTokens(settings: try settings(), client: transport, clock: clock)
        #expect(try tokens.token() == "at-1")
        #expect(try tokens.token() == "at-1")
        let request = try #require(transport.sent.first)
        #expect(request.url == "https://127.0.0.1:1/oauth2/v3/token")
        #expect(request.headers == ["content-type: application/x-www-form-urlencoded"])
        // The secret is read without its trailing newline and percent-encoded.
        #expect(String(decoding: request.body, as: UTF8.self)
                == "grant_type=client_credentials&client_id=104567890&client_secret=s3cr%26t%3D")
        #expect(try tokens.token(replacing: "at-1") == "at-2")
        #expect(try tokens.token(replacing: "at-1") == "at-2", "a token refused earlier does not force another fetch")
        clock.advance(3600 - 300 - 1)
        #expect(try tokens.token() == "at-2")
        clock.advance(1)
        #expect(try tokens.token() == "at-3", "renewed five minutes before expires_in")
        #expect(transport.sent.count == 3)
    }

    @Test func aMissingOrEmptySecretFileIsASetupError() throws {
        var missing = try settings()
        missing.clientSecretPath = folder.file("nope")
        let transport = ScriptedTransport { _ in HuaweiProviderTests.reply(500, nil) }
        #expect(throws: DeliveryError.self) { try HuaweiAccessTokens(settings: missing, client: transport, clock: ManualClock(0)) }
        #expect(throws: DeliveryError.self) {
            try HuaweiAccessTokens(settings: try settings(secret: " \n"), client: transport, clock: ManualClock(0))
        }
    }

    @Test func aRefusedAccessTokenIsRenewedOnceAndThePushSentAgain() throws {
        let fetches = Atomic<Int>(0)
        let script = ScriptedTransport { request in
            if request.url.hasSuffix("/oauth2/v3/token") {
                let n = fetches.add(1, ordering: .relaxed).newValue
                return HTTP2Response(status: 200, headers: [:], body: JSON.object(["access_token": .string("at-\(n)")]).encoded(),
                                     transportError: nil, requestSent: true)
            }
            let auth = request.sharedHeaders?.lines.first { $0.hasPrefix("authorization:") }
            // The first token has expired at Push Kit; the second is good.
            return auth == "authorization: Bearer at-1" ? HuaweiProviderTests.reply(401, "80200003") : HuaweiProviderTests.reply(200, "80000000")
        }
        let tokens = try HuaweiAccessTokens(settings: try settings(), client: script, clock: ManualClock(1_000_000))
        let provider = HuaweiProvider(app: "APP-1", client: script, tokens: tokens, logger: Logger(label: "test", level: .none), window: 10)
        let pushes = (1...3).map { i in
            OutgoingPush(target: Target(deviceID: Int64(i), hwid: "hw-\(i)", platform: Platform.huawei, pushToken: "tok-\(i)", gateway: nil,
                                        language: nil, badge: 0),
                         channel: .huawei, body: Array("{}".utf8))
        }
        let work = ShardWork(shardID: 1, messageID: 1, messageCode: "M-1", hash: "h", app: "APP-1", appID: 1,
                             spec: MessageSpec(content: ["default": "Hi"]), firstDevice: 1, lastDevice: 3,
                             timezoneFilter: .none, attempts: 1, attemptedThrough: nil)
        let outcomes = provider.deliver(pushes, message: work)
        #expect(outcomes.map(\.outcome) == [.sent, .sent, .sent])
        #expect(fetches.load(ordering: .relaxed) == 2)
        let sends = script.sent.filter { $0.url.hasSuffix("/messages:send") }
        #expect(sends.count == 6)
        #expect(Set(sends.map(\.url)) == ["https://127.0.0.1:2/v1/104567890/messages:send"])
    }
}
