import Synchronization
import Testing
import Core
@testable import Delivery
import HTTP2
import TestSupport
import WebPush

/// The VAPID header and the reply table of the Web Push provider, without a network (the provider
/// against a real push-service mock is in IntegrationTests' WebPushDeliveryTests).
@Suite struct WebPushProviderTests {
    static let subject = "mailto:ops@example.com"

    func response(_ status: Int, headers: HTTP2Headers = [:], sent: Bool = false) -> HTTP2Response {
        HTTP2Response(status: status, headers: headers, body: [], transportError: status == 0 ? "reset" : nil, requestSent: sent)
    }

    @Test func theVAPIDHeaderCarriesAnES256TokenForTheOriginAndTheRawPublicKey() throws {
        let key = try P256Key.generate()
        let clock = ManualClock(1_800_000_000)
        let vapid = try VAPIDTokens(pem: try key.pem(), subject: Self.subject, clock: clock)
        let header = try vapid.authorization(origin: "https://fcm.googleapis.com")
        #expect(header.hasPrefix("vapid t="))
        let parts = header.dropFirst("vapid t=".count).split(separator: ",", maxSplits: 1).map(String.init)
        #expect(parts.count == 2 && parts[1] == " k=\(Base64URL.encode(key.publicKey))")
        #expect(Base64URL.decode(String(parts[1].dropFirst(3)))?.count == 65)
        let jwt = parts[0].split(separator: ".").map(String.init)
        #expect(jwt.count == 3)
        #expect(try JSON.parse(Base64URL.decode(jwt[0]) ?? []) == ["typ": "JWT", "alg": "ES256"])
        #expect(try JSON.parse(Base64URL.decode(jwt[1]) ?? [])
                == ["aud": "https://fcm.googleapis.com", "exp": .int(1_800_000_000 + 12 * 3600), "sub": .string(Self.subject)])
        #expect(Base64URL.decode(jwt[2])?.count == 64)
    }

    @Test func aTokenIsKeptPerOriginUntilHalfItsLifeIsGone() throws {
        let clock = ManualClock(1_800_000_000)
        let vapid = try VAPIDTokens(pem: try P256Key.generate().pem(), subject: Self.subject, clock: clock)
        let first = try vapid.token(origin: "https://a.example")
        let other = try vapid.token(origin: "https://b.example")
        #expect(first != other)
        clock.advance(VAPIDTokens.lifetime / 2 - 1)
        #expect(try vapid.token(origin: "https://a.example") == first)
        clock.advance(1)
        let renewed = try vapid.token(origin: "https://a.example")
        #expect(renewed != first)
        // A refused token is replaced at once; a stale refusal of an older token changes nothing.
        vapid.discard(authorization: "vapid t=\(first), k=\(vapid.publicKey)", origin: "https://a.example")
        #expect(try vapid.token(origin: "https://a.example") == renewed)
        vapid.discard(authorization: "vapid t=\(renewed), k=\(vapid.publicKey)", origin: "https://a.example")
        #expect(try vapid.token(origin: "https://a.example") != renewed)
        #expect(throws: DeliveryError.self) { try VAPIDTokens(pem: "not a key", subject: Self.subject, clock: clock) }
    }

    @Test func repliesMapToOutcomes() {
        #expect(WebPushProvider.verdict(response(201)) == .sent)
        #expect(WebPushProvider.verdict(response(410)) == .failed("Gone", deadToken: true))
        #expect(WebPushProvider.verdict(response(404)) == .failed("NotFound", deadToken: true))
        #expect(WebPushProvider.verdict(response(413)) == .failed("PayloadTooLarge", deadToken: false))
        #expect(WebPushProvider.verdict(response(400)) == .failed("BadRequest", deadToken: false))
        #expect(WebPushProvider.verdict(response(403)) == .failed("VAPIDKeyRejected", deadToken: false))
        #expect(WebPushProvider.verdict(response(401)) == .renewCredentials("VAPIDTokenRejected"))
        #expect(WebPushProvider.verdict(response(429, headers: ["retry-after": "7"])) == .retry("TooManyRequests", after: 7, ambiguous: false))
        #expect(WebPushProvider.verdict(response(503)) == .retry("HTTP503", after: nil, ambiguous: false))
        #expect(WebPushProvider.verdict(response(0, sent: true)) == .retry("ConnectionLost", after: nil, ambiguous: true))
        #expect(WebPushProvider.verdict(response(418)) == .failed("HTTP418", deadToken: false))
    }

    @Test func headersComeFromTheMessage() throws {
        var spec = MessageSpec(content: ["default": "Hi"])
        #expect(PayloadBuilder.webHeaders(spec, defaultTTL: 3600) == PayloadBuilder.WebHeaders(ttl: 3600, urgency: nil, topic: nil))
        var web = MessageSpec.WebOptions()
        web.ttl = 120
        web.urgency = "high"
        web.topic = "sale"
        spec.web = web
        let headers = PayloadBuilder.webHeaders(spec, defaultTTL: 3600)
        let vapid = try VAPIDTokens(pem: try P256Key.generate().pem(), subject: Self.subject, clock: ManualClock(0))
        let provider = WebPushProvider(app: "APP", client: NoTransport(), vapid: vapid, defaultTTL: 3600, logger: Logger(label: "test", level: .none),
                                       window: 1)
        let lines = provider.commonHeaders(headers, authorization: "vapid t=x, k=y").lines
        #expect(lines == ["authorization: vapid t=x, k=y", "ttl: 120", "content-encoding: aes128gcm",
                          "content-type: application/octet-stream", "urgency: high", "topic: sale"])
        #expect(RetryPolicy(defaultTTL: 3600).ttl(of: .web, spec) == 120)
    }

    @Test func aBatchIsEncryptedOnSeveralThreadsEachBodyForItsOwnPush() throws {
        // 13 pushes over 4 runs (uneven), every third without a subscription: each body is the push's
        // own plaintext encrypted for its own browser, in push order.
        let browsers = try (0..<13).map { _ in try P256Key.generate() }
        let pushes = try browsers.enumerated().map { index, key in
            let target = Target(deviceID: Int64(index), hwid: "h\(index)", platform: 11, pushToken: "https://push.example/\(index)",
                                gateway: nil, language: nil, badge: 0)
            let subscription = index % 3 == 2 ? nil
                : try WebSubscription(endpoint: target.pushToken, p256dh: key.publicKey, auth: [UInt8](repeating: UInt8(index), count: 16))
            return OutgoingPush(target: target, channel: .web, body: Array("push \(index)".utf8), subscription: subscription)
        }
        let bodies = WebPushProvider.encrypt(pushes, cores: 4)
        #expect(bodies.count == pushes.count)
        for (index, body) in bodies.enumerated() {
            guard index % 3 != 2 else {
                #expect(body == nil)
                continue
            }
            let encrypted = try #require(try body?.get())
            #expect(try WebPushEncryption.decrypt(encrypted, receiver: browsers[index], auth: [UInt8](repeating: UInt8(index), count: 16))
                    == Array("push \(index)".utf8))
        }
        #expect(WebPushProvider.encrypt([], cores: 4).isEmpty)
    }

    @Test func theRouterSendsBrowserPushesToWebPushOnly() throws {
        let web = RecordingProvider()
        let router = ChannelRouter(app: "APP", providers: [.web: web])
        #expect(router.breaker(for: .web)?.provider == "web")
        #expect(router.breaker(for: .apns) == nil)
        let target = Target(deviceID: 7, hwid: "h", platform: 11, pushToken: "https://push.example/x", gateway: nil, language: nil, badge: 0)
        let ios = Target(deviceID: 8, hwid: "i", platform: 1, pushToken: "abc", gateway: nil, language: nil, badge: 0)
        let work = ShardWork(shardID: 1, messageID: 1, messageCode: "M", hash: "h", app: "APP", appID: 1, spec: MessageSpec(content: ["default": "x"]),
                             firstDevice: 0, lastDevice: 10, timezoneFilter: nil, attempts: 0, attemptedThrough: nil)
        let outcomes = router.deliver([OutgoingPush(target: ios, channel: .apns, body: []), OutgoingPush(target: target, channel: .web, body: [])],
                                      message: work)
        #expect(outcomes.map(\.deviceID) == [8, 7])
        #expect(outcomes[0].reason == "APNsNotConfigured")
        #expect(outcomes[1].outcome == .sent)
        #expect(web.delivered.withLock { $0 } == [7])
        // Without a subscription a web push fails at once, naming why.
        let vapid = try VAPIDTokens(pem: try P256Key.generate().pem(), subject: Self.subject, clock: ManualClock(0))
        let provider = WebPushProvider(app: "APP", client: NoTransport(), vapid: vapid, defaultTTL: 60, logger: Logger(label: "test", level: .none),
                                       window: 1)
        #expect(provider.deliver([OutgoingPush(target: target, channel: .web, body: [])], message: work).first?.reason == "NoSubscriptionKeys")
    }
}

/// A transport that must not be used.
struct NoTransport: HTTP2Transport {
    func send(_ requests: [HTTP2Request]) -> [HTTP2Response] {
        requests.map { _ in HTTP2Response.failure("no network in this test") }
    }
    func close() {}
}

/// A provider that sends everything and remembers to which devices.
final class RecordingProvider: PushProvider {
    let delivered = Mutex<[Int64]>([])

    func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        delivered.withLock { $0 += pushes.map(\.target.deviceID) }
        return pushes.map { DeliveryRecord(deviceID: $0.target.deviceID, outcome: .sent) }
    }
}
