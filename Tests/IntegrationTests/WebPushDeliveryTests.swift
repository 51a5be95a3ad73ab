import Foundation
import Testing
import Core
import Delivery
import HTTP2
import TestSupport
import WebPush

/// The Web Push provider against `ops/mocks/webpush_mock.py` over real HTTP/2 and TLS (and over
/// HTTP/1.1 and TLS against the mock's `--http1`, a push service without h2). The mock
/// checks each request as a push service does, verifies the VAPID token with PyJWT and decrypts the
/// payload with http_ece (both third-party implementations) using the browser key of the
/// subscription, so a push it accepts is one a browser would read. The provider is driven directly
/// with the subscriptions the mock hands out (`WebDeviceTests` runs the path from registerDevice).
@Suite(.serialized, .fixedBackend("the provider is driven directly against its mock; WebDeviceTests runs the path on each backend"))
struct WebPushDeliveryTests {
    static let subject = "mailto:ops@example.com"

    let folder: TemporaryDirectory
    let pki: String
    let vapidKey: P256Key
    let mock: MockServer
    let transport: NGHTTP2Transport

    init() throws {
        folder = try TemporaryDirectory()
        pki = try TestPKI.shared()
        vapidKey = try P256Key.generate()
        mock = try MockServer.webpush(pki: pki, folder: folder.path,
                                      extra: ["--application-server-key", Base64URL.encode(vapidKey.publicKey), "--retry-after", "2"])
        transport = try NGHTTP2Transport(name: "test-web", settings: Self.settings(pki: pki, offersHTTP1: true))
    }

    /// The Web Push transport's settings, as `Providers` makes them (`offersHTTP1`).
    static func settings(pki: String, offersHTTP1: Bool) -> HTTP2ClientSettings {
        var settings = HTTP2ClientSettings(connections: 1, maxInFlight: 100, caFile: pki + "/ca.pem")
        settings.offersHTTP1 = offersHTTP1
        return settings
    }

    /// A push service that speaks HTTP/1.1 only, bodies of its answers chunked.
    func http1Service(extra: [String] = []) throws -> MockServer {
        try MockServer.webpush(pki: pki, folder: folder.path, name: "http1",
                               extra: ["--http1", "--application-server-key", Base64URL.encode(vapidKey.publicKey), "--retry-after", "2"] + extra)
    }

    func provider(key: P256Key? = nil) throws -> WebPushProvider {
        let vapid = try VAPIDTokens(pem: try (key ?? vapidKey).pem(), subject: Self.subject, clock: SystemClock())
        return WebPushProvider(app: "SHOP", client: transport, vapid: vapid, defaultTTL: 3600, logger: Logger(label: "test", level: .none),
                               window: 100)
    }

    /// What a browser's `PushSubscription.toJSON()` gives for subscription `id` of `service`.
    func subscription(_ id: String, of service: MockServer? = nil) throws -> WebSubscription {
        let json = try (service ?? mock).admin("GET", "/subscription?id=\(id)")
        return try WebSubscription(endpoint: json["endpoint"]!.stringValue!, p256dh: json["keys"]!["p256dh"]!.stringValue!,
                                   auth: json["keys"]!["auth"]!.stringValue!)
    }

    static var spec: MessageSpec {
        var spec = MessageSpec(content: ["default": "Spring sale", "de": "Frühlingsverkauf"])
        spec.title = ["default": "Shop"]
        spec.link = "https://shop.example/sale"
        spec.data = ["coupon": "SPRING"]
        var web = MessageSpec.WebOptions()
        web.icon = "https://shop.example/icon.png"
        web.image = "https://shop.example/banner.png"
        web.buttons = [.init(title: "Open", url: "https://shop.example/sale"), .init(title: "Later", url: nil)]
        web.ttl = 120
        web.urgency = "high"
        web.topic = "spring-sale"
        spec.web = web
        return spec
    }

    static func work(_ spec: MessageSpec) -> ShardWork {
        ShardWork(shardID: 1, messageID: 42, messageCode: "ABCD-00000000-00000001", hash: "HashOfMessage42", app: "SHOP", appID: 1,
                  spec: spec, firstDevice: 0, lastDevice: 100, timezoneFilter: nil, attempts: 0, attemptedThrough: nil)
    }

    func push(_ id: String, device: Int64, language: String? = nil, of service: MockServer? = nil) throws -> OutgoingPush {
        let subscription = try subscription(id, of: service)
        let target = Target(deviceID: device, hwid: "hwid-\(id)", platform: 11, pushToken: subscription.endpoint, gateway: nil,
                            language: language, badge: 0)
        let body = PayloadBuilder.web(Self.spec, hash: "HashOfMessage42", language: language).encoded()
        return OutgoingPush(target: target, channel: .web, body: body, subscription: subscription)
    }

    @Test func anAcceptedPushIsDecryptedByHttpEceWithAVerifiedVAPIDToken() throws {
        defer { transport.close() }
        let pushes = [try push("browser-1", device: 1), try push("browser-2", device: 2, language: "de")]
        let outcomes = try provider().deliver(pushes, message: Self.work(Self.spec))
        #expect(outcomes == [DeliveryRecord(deviceID: 1, outcome: .sent), DeliveryRecord(deviceID: 2, outcome: .sent)])

        let records = try mock.records()
        #expect(records.count == 2)
        let first = try #require(records.first { $0["token"] == "browser-1" })
        #expect(first["status"] == 201)
        // What the Web SDK's service worker reads, as the browser decrypted it.
        #expect(first["payload"] == [
            "body": "Spring sale", "header": "Shop", "p": "HashOfMessage42", "l": "https://shop.example/sale",
            "i": "https://shop.example/icon.png", "image": "https://shop.example/banner.png",
            "u": .string(#"{"coupon":"SPRING"}"#),
            "buttons": .string(#"[{"title":"Open","url":"https://shop.example/sale"},{"title":"Later"}]"#),
        ])
        #expect(records.first { $0["token"] == "browser-2" }?["payload"]?["body"] == "Frühlingsverkauf")
        #expect(first["ttl"] == 120 && first["urgency"] == "high" && first["topic"] == "spring-sale")
        // PyJWT verified the signature with k=; the claims are what RFC 8292 asks for.
        #expect(first["k"] == .string(Base64URL.encode(vapidKey.publicKey)))
        #expect(first["vapid"]?["aud"] == .string(mock.url))
        #expect(first["vapid"]?["sub"] == .string(Self.subject))
        guard case .int(let exp)? = first["vapid"]?["exp"] else {
            Issue.record("no exp claim in \(first)")
            return
        }
        let now = SystemClock().now()
        #expect(exp > now && exp <= now + 24 * 3600)
    }

    /// Over HTTP/2, and over HTTP/1.1 to a push service without h2 (its answers' bodies chunked),
    /// where every reply means the same.
    @Test(arguments: [false, true]) func goneAndUnknownSubscriptionsAreDeadAndBusyOrDownOnesAreRetried(overHTTP1: Bool) throws {
        defer { transport.close() }
        let service = overHTTP1 ? try http1Service() : mock
        let provider = try provider()
        let ids = ["gone-1", "notfound-1", "busy-1", "down-1", "toolarge-1", "fine-1"]
        let pushes = try ids.enumerated().map { try push($0.element, device: Int64($0.offset + 1), of: service) }
        let outcomes = provider.deliver(pushes, message: Self.work(Self.spec))
        #expect(outcomes[0] == DeliveryRecord(deviceID: 1, outcome: .failed, reason: "Gone", deadToken: pushes[0].target.pushToken))
        #expect(outcomes[1] == DeliveryRecord(deviceID: 2, outcome: .failed, reason: "NotFound", deadToken: pushes[1].target.pushToken))
        #expect(outcomes[2] == DeliveryRecord(deviceID: 3, outcome: .retrying, reason: "TooManyRequests", retryAfter: 2))
        #expect(outcomes[3] == DeliveryRecord(deviceID: 4, outcome: .retrying, reason: "HTTP503", retryAfter: 2))
        #expect(outcomes[4] == DeliveryRecord(deviceID: 5, outcome: .failed, reason: "PayloadTooLarge"))
        #expect(outcomes[5] == DeliveryRecord(deviceID: 6, outcome: .sent))

        // The worker's retry policy schedules the transient ones no sooner than Retry-After.
        let policy = RetryPolicy(defaultTTL: 3600)
        let scheduled = policy.resolve(outcomes[2], attempts: 1, ambiguousBefore: 0, expiresAt: 1_000 + policy.ttl(of: .web, Self.spec),
                                       now: 1_000, jitter: 0)
        #expect(scheduled.schedule == RetrySchedule(nextAt: 1_002, expiresAt: 1_120))
        // And the push service takes them on the next attempt.
        #expect(provider.deliver([pushes[2], pushes[3]], message: Self.work(Self.spec)).map(\.outcome) == [.sent, .sent])
        #expect(try service.records().filter { $0["status"] == 201 }.compactMap { $0["token"]?.stringValue }.sorted()
                == ["busy-1", "down-1", "fine-1"])
    }

    @Test func anotherVAPIDKeyIsRefusedAndSaysSo() throws {
        defer { transport.close() }
        let outcomes = try provider(key: try P256Key.generate()).deliver([try push("browser-3", device: 3)], message: Self.work(Self.spec))
        #expect(outcomes == [DeliveryRecord(deviceID: 3, outcome: .failed, reason: "VAPIDKeyRejected")])
        #expect(try mock.records().map { $0["reason"] } == ["VAPIDKeyMismatch"])
    }

    @Test func aRefusedTokenIsSignedAnewOnceThenThePushFails() throws {
        defer { transport.close() }
        // This push service expects another audience, so it refuses every token Herald signs.
        let strict = try MockServer.webpush(pki: pki, folder: folder.path, name: "strict", extra: ["--audience", "https://push.elsewhere.example"])
        let subscription = try subscription("browser-6", of: strict)
        let target = Target(deviceID: 6, hwid: "hwid-6", platform: 12, pushToken: subscription.endpoint, gateway: nil, language: nil, badge: 0)
        let push = OutgoingPush(target: target, channel: .web, body: Array("{}".utf8), subscription: subscription)
        let outcomes = try provider().deliver([push], message: Self.work(Self.spec))
        #expect(outcomes == [DeliveryRecord(deviceID: 6, outcome: .failed, reason: "VAPIDTokenRejected")])
        let records = try strict.records()
        #expect(records.map { $0["reason"] } == ["BadVAPIDToken", "BadVAPIDToken"])
        #expect(records.first?["error"]?.stringValue?.contains("InvalidAudienceError") == true)
    }

    @Test func theKeyIngestGeneratesIsTheOneTheConfiguredWorkerSignsWith() throws {
        defer { transport.close() }
        let file = folder.file("vapid.pem")
        let (status, output) = try CurveQueueTests.run("herald-ingest", ["--generate-vapid-key", file])
        let publicKey = output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(status == 0)
        let written = try P256Key(path: file).publicKey
        #expect(written.count == 65 && Base64URL.decode(publicKey) == written)
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        #expect(try CurveQueueTests.run("herald-ingest", ["--generate-vapid-key", file]).status == 1)

        // A push service whose browsers subscribed with that key, reached through the configured providers.
        let bound = try MockServer.webpush(pki: pki, folder: folder.path, name: "bound", extra: ["--application-server-key", publicKey])
        var app = AppConfiguration(code: "SHOP", name: "Shop", apiToken: "t")
        app.web = WebPushSettings(vapidPrivateKeyFile: file, subject: Self.subject)
        app.web?.caFile = pki + "/ca.pem"
        app.web?.allowsPrivateEndpoints = true
        let providers = try Providers(apps: [app], delivery: DeliverySettings(), clock: SystemClock(), logger: Logger(label: "test", level: .none),
                                      stats: DeliveryStats())
        defer { providers.close() }
        let router = try #require(providers.byApp["SHOP"])
        #expect(router.breaker(for: .web)?.provider == "web")
        let subscription = try subscription("browser-7", of: bound)
        let target = Target(deviceID: 7, hwid: "hwid-7", platform: 11, pushToken: subscription.endpoint, gateway: nil, language: nil, badge: 0)
        let body = PayloadBuilder.web(Self.spec, hash: "HashOfMessage42", language: nil).encoded()
        let outcomes = router.deliver([OutgoingPush(target: target, channel: .web, body: body, subscription: subscription)],
                                      message: Self.work(Self.spec))
        #expect(outcomes == [DeliveryRecord(deviceID: 7, outcome: .sent)])
        #expect(try bound.records().first?["payload"]?["p"] == "HashOfMessage42")
    }

    /// Without `web.allow_private_endpoints`, the configured provider never connects to an endpoint
    /// whose host is, or resolves to, an address of this host: the subscription is dead, with a
    /// reason that says why, and the push service never hears of it.
    @Test func anEndpointThatResolvesInsideTheNetworkIsNeverContacted() throws {
        defer { transport.close() }
        let file = folder.file("vapid.pem")
        try Data(try vapidKey.pem().utf8).write(to: URL(fileURLWithPath: file))
        var app = AppConfiguration(code: "SHOP", name: "Shop", apiToken: "t")
        app.web = WebPushSettings(vapidPrivateKeyFile: file, subject: Self.subject)
        app.web?.caFile = pki + "/ca.pem"
        let providers = try Providers(apps: [app], delivery: DeliverySettings(), clock: SystemClock(), logger: Logger(label: "test", level: .none),
                                      stats: DeliveryStats())
        defer { providers.close() }
        let router = try #require(providers.byApp["SHOP"])
        let direct = try push("browser-8", device: 8)
        // The same push service by a name that resolves to loopback.
        let subscription = try #require(direct.subscription)
        let named = try WebSubscription(endpoint: subscription.endpoint.replacingOccurrences(of: "127.0.0.1", with: "localhost"),
                                        p256dh: subscription.p256dh, auth: subscription.auth)
        #expect(named.endpoint.hasPrefix("https://localhost:"))
        var byName = direct
        byName.target = Target(deviceID: 9, hwid: "hwid-9", platform: 11, pushToken: named.endpoint, gateway: nil, language: nil, badge: 0)
        byName.subscription = named
        let outcomes = router.deliver([direct, byName], message: Self.work(Self.spec))
        #expect(outcomes == [DeliveryRecord(deviceID: 8, outcome: .failed, reason: "PrivateEndpoint", deadToken: subscription.endpoint),
                             DeliveryRecord(deviceID: 9, outcome: .failed, reason: "PrivateEndpoint", deadToken: named.endpoint)])
        #expect(try mock.records().isEmpty)
        // The provider that allows it (the tests' own) reaches the same subscription.
        #expect(try provider().deliver([direct], message: Self.work(Self.spec)) == [DeliveryRecord(deviceID: 8, outcome: .sent)])
    }

    @Test func anOutageIsTransientForEveryPush() throws {
        defer { transport.close() }
        try mock.admin("POST", "/outage?status=503&retry_after=3")
        let outcomes = try provider().deliver([try push("browser-4", device: 4), try push("browser-5", device: 5)], message: Self.work(Self.spec))
        #expect(outcomes.map(\.outcome) == [.retrying, .retrying])
        #expect(outcomes.map(\.retryAfter) == [3, 3])
        // Enough transient failures open the provider's circuit breaker for at least Retry-After.
        let breaker = CircuitBreaker(provider: "web", app: "SHOP")
        breaker.observe(total: 10, transient: 10, reason: outcomes[0].reason, retryAfter: 3, now: 0, jitter: 0)
        #expect(breaker.gate(now: 2.9) != .closed && breaker.gate(now: 2.9) != .probe)
        #expect(breaker.gate(now: 3) == .probe)
    }

    // MARK: - A push service without h2

    /// Eight pushes to a push service that speaks HTTP/1.1 only and closes each connection after
    /// three answers: every one is decrypted and accepted, on connections reopened as the service
    /// closes them, never more than four at once.
    @Test func aPushServiceWithoutH2IsSpokenHTTP1ToOnKeptAliveConnections() throws {
        defer { transport.close() }
        let service = try http1Service(extra: ["--http1-max-requests", "3"])
        let pushes = try (1...8).map { try push("browser-\($0)", device: Int64($0), of: service) }
        let outcomes = try provider().deliver(pushes, message: Self.work(Self.spec))
        #expect(outcomes == (1...8).map { DeliveryRecord(deviceID: Int64($0), outcome: .sent) })

        let records = try service.records()
        #expect(records.count == 8 && records.allSatisfy { $0["status"] == 201 }, "\(records)")
        #expect(records.allSatisfy { $0["payload"]?["p"] == "HashOfMessage42" && $0["payload"]?["body"] == "Spring sale" }, "\(records)")
        let first = try #require(records.first)
        #expect(first["ttl"] == 120 && first["urgency"] == "high" && first["topic"] == "spring-sale")
        #expect(first["vapid"]?["aud"] == .string(service.url) && first["k"] == .string(Base64URL.encode(vapidKey.publicKey)))
        // Three answers a connection: at least three connections carried the eight.
        #expect(Set(records.compactMap { $0["connection"]?.stringValue }).count >= 3, "\(records)")
        let stats = try service.stats()
        #expect((stats["peak_connections"]?.lenientInt ?? 99) <= 4, "\(stats.text)")
        #expect((stats["peak_streams_per_connection"]?.lenientInt ?? 99) == 1, "\(stats.text)")
        #expect(try mock.records().isEmpty)
    }

    /// A connection that dies with the request written and no answer leaves its outcome unknown, as
    /// over HTTP/2; the next push opens a new connection.
    @Test func anHTTP1ConnectionLostBeforeItsAnswerIsAmbiguous() throws {
        defer { transport.close() }
        let service = try http1Service()
        let provider = try provider()
        try service.admin("POST", "/outage?status=drop")
        let lost = provider.deliver([try push("browser-1", device: 1, of: service)], message: Self.work(Self.spec))
        #expect(lost == [DeliveryRecord(deviceID: 1, outcome: .retrying, reason: "ConnectionLost", ambiguous: true)])
        try service.admin("POST", "/outage/clear")
        // The transport waits out its back-off after the failure, then reconnects (bounded: 20 tries).
        var outcome: [DeliveryRecord] = []
        for _ in 0..<20 {
            outcome = provider.deliver([try push("browser-1", device: 1, of: service)], message: Self.work(Self.spec))
            if outcome.first?.outcome == .sent { break }
            usleep(250_000)
        }
        #expect(outcome == [DeliveryRecord(deviceID: 1, outcome: .sent)])
    }

    /// APNs, FCM and Huawei transports offer h2 only: a server without it is a connection failure.
    @Test func aTransportThatOffersOnlyH2RefusesAServiceWithoutIt() throws {
        defer { transport.close() }
        let service = try http1Service()
        let h2Only = try NGHTTP2Transport(name: "test-h2", settings: Self.settings(pki: pki, offersHTTP1: false))
        defer { h2Only.close() }
        let vapid = try VAPIDTokens(pem: try vapidKey.pem(), subject: Self.subject, clock: SystemClock())
        let provider = WebPushProvider(app: "SHOP", client: h2Only, vapid: vapid, defaultTTL: 3600, logger: Logger(label: "test", level: .none),
                                       window: 100)
        let outcomes = provider.deliver([try push("browser-1", device: 1, of: service)], message: Self.work(Self.spec))
        #expect(outcomes == [DeliveryRecord(deviceID: 1, outcome: .retrying, reason: "ConnectionError")])
        #expect(try service.records().isEmpty)
    }
}
