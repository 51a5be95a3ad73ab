import Foundation
import Core
import TestSupport
import Testing
import WebPush

/// Browsers end to end: the Pushwoosh Web SDK's registerDevice (`push_token` the subscription's
/// endpoint, `public_key` and `auth_token` its keys in base64) on the real `herald-ingest`, a
/// campaign for Chrome, Firefox and Edge run by the real `herald-worker`, and the Web Push mock of
/// `ops/mocks` over HTTP/2 + TLS, which verifies each VAPID token with PyJWT and decrypts each
/// payload with http_ece using the browser's private key. Every wait is bounded.
@Suite(.serialized) struct WebDeviceTests {
    static let subject = "mailto:ops@shop.example"

    /// Herald whose Shop app delivers through the Web Push mock only; the mock is on loopback, so
    /// the app allows private endpoints unless `allowsPrivateEndpoints` is false.
    final class Rig {
        let folder: TemporaryDirectory
        let push: MockServer
        let herald: HeraldProcesses
        /// The public key of the app's VAPID key (base64url), what the push service expects.
        let applicationServerKey: String

        /// `pushArguments` go to the Web Push mock (`--http1`: a push service without h2).
        init(database: TestDatabase, allowsPrivateEndpoints: Bool = true, pushArguments: [String] = []) throws {
            folder = try TemporaryDirectory()
            let pki = try TestPKI.shared()
            let vapid = try P256Key.generate()
            let keyFile = folder.path + "/vapid.pem"
            try Data(try vapid.pem().utf8).write(to: URL(fileURLWithPath: keyFile))
            applicationServerKey = Base64URL.encode(vapid.publicKey)
            push = try MockServer.webpush(pki: pki, folder: folder.path, extra: ["--application-server-key", applicationServerKey] + pushArguments)
            herald = try HeraldProcesses(shopDelivery: [
                "web": ["vapid_private_key_file": .string(keyFile), "subject": .string(WebDeviceTests.subject), "ca_file": .string(pki + "/ca.pem"),
                        "allow_private_endpoints": .bool(allowsPrivateEndpoints)],
            ], database: database)
            try herald.startIngest()
            try herald.startWorker()
            try herald.waitForWorkers(1)
        }

        deinit { push.stop() }

        /// The registerDevice request of the Web SDK for the mock's subscription `id`, its keys as
        /// standard base64 (what the SDK sends); `edit` changes it before it is sent.
        func registration(_ id: String, platform: Int, edit: (inout [String: JSON]) -> Void = { _ in }) throws -> JSON {
            let subscription = try push.admin("GET", "/subscription?id=\(id)")
            func standard(_ key: JSON?) throws -> String {
                let bytes = try #require(key?.stringValue.flatMap(Base64URL.decode), "a key in \(subscription.text)")
                return Data(bytes).base64EncodedString()
            }
            var fields: [String: JSON] = [
                "application": .string(HeraldProcesses.appCode), "hwid": .string("hwid-\(id)"), "device_type": .int(Int64(platform)),
                "push_token": .string(try #require(subscription["endpoint"]?.stringValue)),
                "public_key": .string(try standard(subscription["keys"]?["p256dh"])),
                "auth_token": .string(try standard(subscription["keys"]?["auth"])),
                "language": "en", "device_model": "Chrome 131",
            ]
            edit(&fields)
            return .object(fields)
        }
    }

    @Test(arguments: TestDatabase.tested) func browsersRegisteredByTheWebSDKReceiveACampaignAndGoneOnesArePruned(
        _ database: TestDatabase
    ) throws {
        let rig = try Rig(database: database)
        let browsers = [("chrome-1", Platform.chrome), ("firefox-1", Platform.firefox), ("edge-1", Platform.edge), ("gone-1", Platform.chrome),
                        ("nokeys-1", Platform.chrome)]
        for (id, platform) in browsers { try rig.herald.ok("registerDevice", try rig.registration(id, platform: platform)) }
        // A browser stored without keys, as one registered before Herald kept them.
        let forget = "UPDATE devices SET web_p256dh = NULL, web_auth = NULL WHERE hwid = 'hwid-nokeys-1'"
        try rig.herald.execute(sqlite: forget, postgres: forget)
        // Not targeted by `platforms`: an Android phone (the app has no FCM section either).
        try rig.herald.ok("registerDevice", [
            "application": .string(HeraldProcesses.appCode), "hwid": "and-1", "device_type": 3, "push_token": .string(deviceToken("", seed: "and-1")),
        ])
        let stored = try rig.herald.query("SELECT web_p256dh, web_auth FROM devices WHERE hwid = 'hwid-chrome-1'", columns: 2)
        let sent = try rig.registration("chrome-1", platform: Platform.chrome)
        #expect(stored.first?[0] == sent["public_key"]?.stringValue && stored.first?[1] == sent["auth_token"]?.stringValue)

        let (code, funnel) = try sendAndWait(rig, ["send_date": "now", "content": ["default": "Spring sale", "de": "Frühlingsverkauf"],
                                                   "title": "Shop", "platforms": [11, 12, 15], "link": "https://shop.example/sale"])
        #expect(funnel["targeted"] == 5 && funnel["sent"] == 3 && funnel["failed"] == 2, "\(funnel.text)")
        let rows = try rig.herald.deliveriesByDevice(code)
        #expect(Set(rows.keys) == Set(browsers.map { "hwid-\($0.0)" }))
        for id in ["chrome-1", "firefox-1", "edge-1"] {
            #expect(rows["hwid-\(id)"]?.status == "sent", "\(id)")
            // The mock decrypted the push with the browser's key and accepted it.
            let records = try rig.push.records(token: id)
            #expect(records.count == 1 && records.first?["status"] == 201, "\(id): \(records)")
            #expect(records.first?["payload"]?["body"] == "Spring sale" && records.first?["payload"]?["header"] == "Shop", "\(records)")
            #expect(records.first?["payload"]?["l"] == "https://shop.example/sale")
            #expect((records.first?["payload"]?["p"]?.stringValue ?? "").isEmpty == false)
        }
        #expect(rows["hwid-gone-1"]?.status == "failed" && rows["hwid-gone-1"]?.reason == "Gone", "\(rows)")
        #expect(rows["hwid-nokeys-1"]?.status == "failed" && rows["hwid-nokeys-1"]?.reason == "NoSubscriptionKeys", "\(rows)")
        #expect(try rig.push.records(token: "nokeys-1").isEmpty)
        #expect(try rig.push.records(token: "gone-1").map { $0["status"] } == [410])
        let pruned = try rig.herald.query("SELECT token_invalid_reason FROM devices WHERE hwid = 'hwid-gone-1'", columns: 1)
        #expect(pruned.first?[0] != nil, "the gone subscription's token is dead")

        // The pruned browser is not targeted again; the one without keys is, and fails again.
        let (_, again) = try sendAndWait(rig, ["send_date": "now", "content": "Again", "platforms": [11, 12, 15]])
        #expect(again["targeted"] == 4 && again["sent"] == 3 && again["failed"] == 1, "\(again.text)")
        #expect(try rig.push.records(token: "gone-1").count == 1)
    }

    /// A push service that speaks HTTP/1.1 only: the worker reaches its browsers over HTTP/1.1,
    /// each push decrypts, a 410 prunes the subscription, and a 429 is sent again once its
    /// Retry-After has passed.
    @Test(arguments: TestDatabase.tested) func aCampaignReachesBrowsersOfAPushServiceWithoutH2(_ database: TestDatabase) throws {
        let rig = try Rig(database: database, pushArguments: ["--http1", "--retry-after", "2"])
        let browsers = [("chrome-1", Platform.chrome), ("firefox-1", Platform.firefox), ("gone-1", Platform.chrome), ("busy-1", Platform.firefox)]
        for (id, platform) in browsers { try rig.herald.ok("registerDevice", try rig.registration(id, platform: platform)) }

        let (code, funnel) = try sendAndWait(rig, ["send_date": "now", "content": "Spring sale", "title": "Shop", "platforms": [11, 12]])
        #expect(funnel["targeted"] == 4 && funnel["sent"] == 3 && funnel["failed"] == 1, "\(funnel.text)")
        let rows = try rig.herald.deliveriesByDevice(code)
        for id in ["chrome-1", "firefox-1", "busy-1"] {
            #expect(rows["hwid-\(id)"]?.status == "sent", "\(id): \(rows)")
            let accepted = try rig.push.records(token: id).filter { $0["status"] == 201 }
            #expect(accepted.count == 1 && accepted.first?["payload"]?["body"] == "Spring sale", "\(id): \(accepted)")
        }
        #expect(rows["hwid-gone-1"]?.status == "failed" && rows["hwid-gone-1"]?.reason == "Gone", "\(rows)")
        let pruned = try rig.herald.query("SELECT token_invalid_reason FROM devices WHERE hwid = 'hwid-gone-1'", columns: 1)
        #expect(pruned.first?[0] != nil, "the gone subscription's token is dead")
        // The busy browser: refused with Retry-After 2, then taken on the retry, which waited for it
        // (the worker schedules in whole seconds, so at least one of them passed).
        let busy = try rig.push.records(token: "busy-1")
        #expect(busy.map { $0["status"] } == [429, 201], "\(busy)")
        if busy.count == 2, let refused = busy[0]["ts"]?.lenientDouble, let accepted = busy[1]["ts"]?.lenientDouble {
            #expect(accepted - refused >= 1, "\(busy)")
        }
        #expect((try rig.push.stats()["peak_streams_per_connection"]?.lenientInt ?? 99) == 1)
    }

    @Test func aRegistrationWithBadKeysIsRefusedNamingTheFieldAndStoresNothing() throws {
        let rig = try Rig(database: .configured)
        let notOnTheCurve = Data([0x04] + [UInt8](repeating: 7, count: 64)).base64EncodedString()
        let cases: [(String, (inout [String: JSON]) -> Void)] = [
            ("public_key", { $0["public_key"] = .string(notOnTheCurve) }),
            ("public_key", { $0["public_key"] = "not base64!" }),
            ("auth_token", { $0["auth_token"] = .string(Data([UInt8](repeating: 1, count: 15)).base64EncodedString()) }),
            ("push_token", { $0["push_token"] = "http://push.example/push/abc" }),
            ("push_token", { $0["push_token"] = "https://push.example:70000/push/abc" }),
            ("push_token", { $0["push_token"] = "https:///push/abc" }),
            ("push_token", { $0["push_token"] = "https://push.example/push/abc HTTP/1.1\r\nhost: push.example\r\n\r\nDELETE /admin" }),
            ("public_key", { $0["public_key"] = nil }),
        ]
        for (index, (field, edit)) in cases.enumerated() {
            let (status, body) = try rig.herald.call("registerDevice", try rig.registration("bad-\(index)", platform: Platform.chrome, edit: edit))
            #expect(status == 200 && body["status_code"] == 210, "\(field): \(body.text)")
            #expect(body["status_message"]?.stringValue?.hasPrefix(field) == true, "\(field): \(body.text)")
            #expect(try rig.herald.query("SELECT id FROM devices WHERE hwid = 'hwid-bad-\(index)'", columns: 1).isEmpty, "\(field)")
        }
        // A good registration followed by a bad one keeps the good keys.
        let good = try rig.registration("chrome-2", platform: Platform.chrome)
        try rig.herald.ok("registerDevice", good)
        let (_, refused) = try rig.herald.call("registerDevice", try rig.registration("chrome-2", platform: Platform.chrome) {
            $0["public_key"] = .string(notOnTheCurve)
        })
        #expect(refused["status_code"] == 210, "\(refused.text)")
        let stored = try rig.herald.query("SELECT web_p256dh FROM devices WHERE hwid = 'hwid-chrome-2'", columns: 1)
        #expect(stored.first?[0] == good["public_key"]?.stringValue)
    }

    @Test func endpointsOnThisMachineOrAPrivateNetworkAreRefusedUnlessAllowed() throws {
        let rig = try Rig(database: .configured, allowsPrivateEndpoints: false)
        let endpoints = ["https://127.0.0.1:8443/push/a", "https://localhost/push/b", "https://[::1]/push/c", "https://10.1.2.3/push/d",
                         "https://192.168.0.10/push/e", "https://169.254.169.254/latest/meta-data", "https://[fd00::1]/push/f",
                         "https://2130706433/push/g"]
        for (index, endpoint) in endpoints.enumerated() {
            let (status, body) = try rig.herald.call("registerDevice", try rig.registration("private-\(index)", platform: Platform.chrome) {
                $0["push_token"] = .string(endpoint)
            })
            #expect(status == 200 && body["status_code"] == 210, "\(endpoint): \(body.text)")
            let message = body["status_message"]?.stringValue ?? ""
            #expect(message.hasPrefix("push_token:") && message.contains("web.allow_private_endpoints"), "\(endpoint): \(message)")
            #expect(try rig.herald.query("SELECT id FROM devices WHERE hwid = 'hwid-private-\(index)'", columns: 1).isEmpty, "\(endpoint)")
        }
        // A push service on the Internet is accepted (nothing is looked up at registration).
        try rig.herald.ok("registerDevice", try rig.registration("public-1", platform: Platform.chrome) {
            $0["push_token"] = "https://fcm.googleapis.com/fcm/send/public-1"
        })
    }

    @Test func checkDeviceSaysWhetherTheDeviceIsKnownAndCanBePushedTo() throws {
        let rig = try Rig(database: .configured)
        func check(_ hwid: String) throws -> JSON {
            try rig.herald.ok("checkDevice", ["application": .string(HeraldProcesses.appCode), "hwid": .string(hwid), "device_type": 11])
        }
        #expect(try check("hwid-chrome-3") == ["exist": false, "push_token_exist": false])
        try rig.herald.ok("registerDevice", try rig.registration("chrome-3", platform: Platform.chrome))
        #expect(try check("hwid-chrome-3") == ["exist": true, "push_token_exist": true])
        try rig.herald.ok("unregisterDevice", ["application": .string(HeraldProcesses.appCode), "hwid": "hwid-chrome-3"])
        #expect(try check("hwid-chrome-3") == ["exist": true, "push_token_exist": false])
        let (_, missing) = try rig.herald.call("checkDevice", ["application": .string(HeraldProcesses.appCode)])
        #expect(missing["status_code"] == 210 && missing["status_message"] == "hwid is required", "\(missing.text)")
    }

    @Test func getConfigGivesTheWebSDKTheApplicationServerKey() throws {
        let rig = try Rig(database: .configured)
        // What the Web SDK asks for on every page load; Herald answers the features it has.
        let sdk = try rig.herald.ok("getConfig", [
            "application": .string(HeraldProcesses.appCode), "hwid": "hwid-config", "device_type": 11,
            "features": ["page_visit", "vapid_key", "web_in_apps", "events", "subscription_prompt"],
        ])
        #expect(sdk == ["features": ["vapid_key": .string(rig.applicationServerKey), "events": []]], "\(sdk.text)")
        let key = try #require(sdk["features"]?["vapid_key"]?.stringValue.flatMap(Base64URL.decode))
        #expect(key.count == 65 && key.first == 0x04, "an uncompressed P-256 point")
        // The iOS SDK's request gets what it asks for, without the key.
        let ios = try rig.herald.ok("getConfig", ["application": .string(HeraldProcesses.appCode), "features": ["channels", "events"]])
        #expect(ios == ["features": ["channels": [], "events": []]], "\(ios.text)")
        let (_, bad) = try rig.herald.call("getConfig", ["application": .string(HeraldProcesses.appCode), "features": "vapid_key"])
        #expect(bad["status_code"] == 210 && bad["status_message"]?.stringValue?.hasPrefix("features") == true, "\(bad.text)")
    }

    @Test(arguments: TestDatabase.tested) func deleteDeviceForgetsTheBrowserWhichNoCampaignReachesAgain(_ database: TestDatabase) throws {
        let rig = try Rig(database: database)
        let app = JSON.string(HeraldProcesses.appCode)
        for id in ["chrome-5", "chrome-6"] {
            try rig.herald.ok("registerDevice", try rig.registration(id, platform: Platform.chrome) { $0["tags"] = ["City": "Lyon"] })
        }
        try rig.herald.ok("registerUser", ["application": app, "hwid": "hwid-chrome-5", "userId": "alice", "device_type": 11])
        // The Web SDK's removeAllDeviceData: deleteDevice with the common fields, `response` null.
        let deleted = ["application": app, "hwid": "hwid-chrome-5", "userId": "alice", "device_type": 11, "device_model": "Chrome 131",
                       "timezone": 3600, "language": "en", "v": "3.2.0"] as JSON
        #expect(try rig.herald.ok("deleteDevice", deleted) == .null)
        #expect(try rig.herald.ok("checkDevice", ["application": app, "hwid": "hwid-chrome-5", "device_type": 11])
                == ["exist": false, "push_token_exist": false])
        #expect(try rig.herald.ok("getTags", ["application": app, "hwid": "hwid-chrome-5"]) == ["result": [:]])
        #expect(try rig.herald.query("SELECT id FROM devices WHERE user_id = 'alice' OR web_p256dh IS NOT NULL", columns: 1).count == 1,
                "only the other browser keeps a user or keys")
        // The SDK's retry of a call whose reply it missed succeeds too; no hwid is a 210.
        #expect(try rig.herald.ok("deleteDevice", deleted) == .null)
        let (_, missing) = try rig.herald.call("deleteDevice", ["application": app, "device_type": 11])
        #expect(missing["status_code"] == 210 && missing["status_message"] == "hwid is required", "\(missing.text)")

        let (_, funnel) = try sendAndWait(rig, ["send_date": "now", "content": "Hello", "platforms": [11]])
        #expect(funnel["targeted"] == 1 && funnel["sent"] == 1, "\(funnel.text)")
        #expect(try rig.push.records(token: "chrome-5").isEmpty && rig.push.records(token: "chrome-6").count == 1)
        // Registering again makes a new device, without the old tags.
        try rig.herald.ok("registerDevice", try rig.registration("chrome-5", platform: Platform.chrome))
        #expect(try rig.herald.ok("getTags", ["application": app, "hwid": "hwid-chrome-5"]) == ["result": [:]])
    }

    @Test func aWebPayloadOverTheLimitIsRefusedAtCreateMessage() throws {
        let rig = try Rig(database: .configured)
        let (status, body) = try rig.herald.createMessage([
            ["send_date": "now", "content": .string(String(repeating: "x", count: 4000)), "platforms": [11]],
        ])
        #expect(status == 200 && body["status_code"] == 210, "\(body.text)")
        #expect(body["status_message"]?.stringValue?.contains("Web Push payload") == true, "\(body.text)")
        // The same text to Android only fits.
        let (_, android) = try rig.herald.createMessage([
            ["send_date": "now", "content": .string(String(repeating: "x", count: 4000)), "platforms": [3]],
        ])
        #expect(android["status_code"] == 200, "\(android.text)")
    }

    func sendAndWait(_ rig: Rig, _ notification: JSON) throws -> (code: String, funnel: JSON) {
        let code = try rig.herald.send(notification)
        return (code, try rig.herald.waitForMessage(code, timeout: 30))
    }
}
