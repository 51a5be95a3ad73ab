import Core
import Delivery
import Foundation
import HTTP2Server
@testable import Loadgen
import SDKClient
import Testing
import TestSupport
import WebPush

/// `herald-load fleet --web F`: a share of the devices are browsers that register as the Pushwoosh
/// Web SDK does, with a subscription on the edge's Web Push port whose keys derive from the seed;
/// the edge's Web Push endpoint takes a push only with the right VAPID token and decrypts it with
/// the browser's key.
struct WebFleetTests {
    static let pushService = "https://127.0.0.1:9443"
    static let now: Int64 = 1_772_409_600

    func register(_ device: FleetDevice) throws -> JSON {
        let builder = FleetRequestBuilder(target: try TargetURL(parsing: "http://127.0.0.1:8080/json/1.3/"), app: "ABCDE-12345",
                                          webPush: Self.pushService)
        defer { builder.release() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        let length = try #require(builder.write(.register, device: device, now: Self.now, playerID: nil, into: buffer))
        let bytes = Array(buffer[0..<length])
        let start = try #require((0..<bytes.count - 3).first { bytes[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }) + 4
        return try #require(try JSON.parse(Array(bytes[start...]))["request"])
    }

    @Test func aShareOfTheDevicesAreChromeAndFirefoxAndTheOthersKeepTheirPlatform() {
        let devices = (0..<3000).map { FleetDevice(seed: 4, index: $0, oneSignalFraction: 0.1, huaweiFraction: 0.3, webFraction: 0.4) }
        let browsers = devices.filter(\.isWeb)
        let firefox = browsers.filter(\.isFirefox)
        #expect(browsers.count > 1000 && browsers.count < 1400, "\(browsers.count)")
        #expect(firefox.count > browsers.count / 6 && firefox.count < browsers.count / 3, "\(firefox.count) of \(browsers.count)")
        for device in devices {
            #expect(device.platform == (device.isWeb ? (device.isFirefox ? 12 : 11) : device.isIOS ? 1 : (device.isHuawei ? 17 : 3)))
            if device.isWeb {
                #expect(!device.isIOS && !device.isHuawei && !device.usesOneSignal && !device.optedOut)
                #expect(device.screens.map(\.description) == DeviceCatalog.webPages.map(\.description))
            } else {
                let plain = FleetDevice(seed: 4, index: device.index, oneSignalFraction: 0.1, huaweiFraction: 0.3)
                #expect(plain.isIOS == device.isIOS && plain.isHuawei == device.isHuawei && plain.usesOneSignal == device.usesOneSignal)
            }
        }
    }

    @Test func aBrowserRegistersItsSubscriptionAsTheWebSDKDoes() throws {
        let device = try #require((0..<500).lazy.map { FleetDevice(seed: 3, index: $0, oneSignalFraction: 0, webFraction: 1) }.first { $0.isFirefox })
        let request = try register(device)
        #expect(request["device_type"] == 12 && request["application"] == "ABCDE-12345")
        let endpoint = try #require(request["push_token"]?.stringValue)
        #expect(endpoint.hasPrefix(Self.pushService + "/push/\(device.index)."), "\(endpoint)")
        let p256dh = try #require(request["public_key"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        let auth = try #require(request["auth_token"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        // What Herald checks at registerDevice: an https endpoint, a point on P-256, a 16-byte secret.
        let subscription = try WebSubscription(endpoint: endpoint, p256dh: Array(p256dh), auth: Array(auth))
        #expect(subscription.p256dh == FleetDevice.webPushPublicKey(hash: device.hash))
        #expect(request["hwid"] == .string(FleetDevice.webHWID(hash: device.hash)))
        #expect(request["device_model"]?.stringValue?.hasPrefix("Firefox ") == true && request["timezone"]?.lenientInt != nil)
        #expect(request["notificationTypes"] == nil && request["gateway"] == nil && request["package"] == nil)
        // Another seed derives other keys for the same index.
        #expect(FleetDevice.webPushPublicKey(hash: Mix.hash(5, UInt64(device.index))) != subscription.p256dh)
    }

    // MARK: The edge's Web Push endpoint

    final class Service {
        let vapid: KeyPair
        let endpoint: WebPushEndpoint

        init(seed: UInt64 = 3, dead: Set<String> = []) throws {
            vapid = try KeyPair(generating: .p256)
            let publicKey = Base64URL.encode(try P256Key(pem: try vapid.privatePEM()).publicKey)
            endpoint = WebPushEndpoint(origin: WebFleetTests.pushService, seed: seed, vapid: vapid, vapidPublicKey: publicKey, deadEndpoints: dead)
        }

        /// Herald's side: a push to `device` as `WebPushProvider` sends it, signed with `key` at `issued`.
        func push(to device: FleetDevice, payload: JSON, key: KeyPair? = nil, issued: Int64 = WebFleetTests.now,
                  audience: String = WebFleetTests.pushService) throws -> HTTP2Request {
            let tokens = try VAPIDTokens(pem: try (key ?? vapid).privatePEM(), subject: "mailto:ops@shop.example", clock: ManualClock(issued))
            let path = "/push/\(device.index)." + String(subscriptionID(device))
            let subscription = try WebSubscription(endpoint: WebFleetTests.pushService + path, p256dh: FleetDevice.webPushPublicKey(hash: device.hash),
                                                   auth: FleetDevice.webPushAuth(hash: device.hash))
            let body = try WebPushEncryption.encrypt(payload.encoded(), for: subscription)
            return HTTP2Request(method: "POST", path: path,
                                headers: [("authorization", try tokens.authorization(origin: audience)), ("ttl", "3600"),
                                          ("content-encoding", "aes128gcm"), ("urgency", "high")], body: body)
        }

        func subscriptionID(_ device: FleetDevice) -> Substring {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
            defer { buffer.deallocate() }
            var out = ByteWriter(buffer)
            device.writeWebPushPath(&out)
            return String(decoding: out.written, as: UTF8.self).split(separator: ".").last!
        }

        func refusal(_ request: HTTP2Request, now: Int64 = WebFleetTests.now) -> WebPushEndpoint.Refusal? {
            do {
                _ = try endpoint.handle(request, now: now)
                return nil
            } catch {
                return error
            }
        }
    }

    var browser: FleetDevice { (0..<500).lazy.map { FleetDevice(seed: 3, index: $0, oneSignalFraction: 0, webFraction: 1) }.first { !$0.isFirefox }! }

    @Test func aPushSignedWithTheSubscribedKeyIsDecryptedWithTheBrowsersKey() throws {
        let service = try Service()
        let payload: JSON = ["header": "Shop", "body": "Spring sale", "p": "AbCd1"]
        let delivery = try service.endpoint.handle(try service.push(to: browser, payload: payload), now: Self.now)
        #expect(delivery.index == browser.index && delivery.payload == payload && delivery.hwid == FleetDevice.webHWID(hash: browser.hash))
    }

    @Test func whatAPushServiceRefusesIsRefusedWithItsStatus() throws {
        let service = try Service(dead: [Self.pushService + "/push/\(browser.index)." + (try Service().subscriptionID(browser))])
        let payload: JSON = ["body": "Hello", "p": "x"]
        // Dead: the subscription is gone.
        #expect(service.refusal(try service.push(to: browser, payload: payload)) == .init(status: 410, reason: "Gone"))
        let other = (0..<500).lazy.map { FleetDevice(seed: 3, index: $0, oneSignalFraction: 0, webFraction: 1) }.filter { $0.index != self.browser.index }.first!
        let good = try service.push(to: other, payload: payload)
        #expect(service.refusal(good) == nil)

        // Herald signs with another VAPID key than the one the browsers subscribed with.
        #expect(service.refusal(try service.push(to: other, payload: payload, key: try KeyPair(generating: .p256)))
                == .init(status: 403, reason: "VAPIDKeyMismatch"))
        // A token for another push service, an expired one (VAPIDTokens signs for 12 hours).
        #expect(service.refusal(try service.push(to: other, payload: payload, audience: "https://push.example"))
                == .init(status: 401, reason: "BadVAPIDAudience"))
        #expect(service.refusal(try service.push(to: other, payload: payload, issued: Self.now - 13 * 3600))
                == .init(status: 401, reason: "ExpiredVAPIDToken"))
        var unsigned = good
        unsigned.headers.removeAll { $0.name == "authorization" }
        #expect(service.refusal(unsigned) == .init(status: 401, reason: "MissingVAPID"))
        var forged = good
        let token = forged.header("authorization")!
        forged.headers[0].value = token.replacingOccurrences(of: "t=", with: "t=x")
        #expect(service.refusal(forged)?.status == 401)

        // A subscription of another seed, a body the browser cannot decrypt, and bad headers.
        var foreign = good
        foreign.path = "/push/\(other.index).AAAAAAAAAAAAAAAA"
        #expect(service.refusal(foreign) == .init(status: 404, reason: "NoSuchSubscription"))
        var tampered = good
        tampered.body[tampered.body.count - 1] ^= 1
        #expect(service.refusal(tampered) == .init(status: 400, reason: "DecryptionFailed"))
        // Encrypted for another browser's keys.
        var misdirected = try service.push(to: browser, payload: payload)
        misdirected.path = good.path
        #expect(service.refusal(misdirected) == .init(status: 400, reason: "DecryptionFailed"))
        var noTTL = good
        noTTL.headers.removeAll { $0.name == "ttl" }
        #expect(service.refusal(noTTL) == .init(status: 400, reason: "BadTTL"))
        var plain = good
        plain.headers.removeAll { $0.name == "content-encoding" }
        #expect(service.refusal(plain) == .init(status: 400, reason: "BadContentEncoding"))
        var large = good
        large.body += [UInt8](repeating: 0, count: 4097 - large.body.count)
        #expect(service.refusal(large) == .init(status: 413, reason: "PayloadTooLarge"))
    }
}
