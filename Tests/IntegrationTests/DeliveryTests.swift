import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real delivery: the Shop app configured with `apns` and `fcm` blocks (no sink), the real
/// `herald-ingest` and `herald-worker`, and the loopback APNs/FCM mocks of `ops/mocks` over HTTP/2 + TLS.
/// What is checked is what an operator would check: the funnel, the `deliveries` table, and what the
/// mocks received (their record files and `/stats`). Every wait is bounded.
@Suite(.serialized) struct DeliveryTests {
    /// A device with a scripted token and the outcome the test expects (nil reason: sent).
    struct Device {
        let hwid: String
        let platform: Int
        let token: String
        let reason: String?

        static func iOS(_ hwid: String, _ prefix: String = "", fails reason: String? = nil) -> Device {
            Device(hwid: hwid, platform: 1, token: deviceToken(prefix, seed: hwid), reason: reason)
        }
        static func android(_ hwid: String, _ prefix: String = "", fails reason: String? = nil) -> Device {
            Device(hwid: hwid, platform: 3, token: deviceToken(prefix, seed: hwid), reason: reason)
        }
    }

    static func statuses(_ lines: [JSON]) -> [Int64] { lines.compactMap { $0["status"]?.lenientInt } }

    static func errors(_ devices: [Device]) -> JSON {
        var counts: [String: JSON] = [:]
        for reason in devices.compactMap(\.reason) { counts[reason] = .int((counts[reason]?.lenientInt ?? 0) + 1) }
        return .object(counts)
    }

    // MARK: - 1. Every outcome of a mixed campaign

    @Test(arguments: TestDatabase.tested) func mixedCampaignThroughBothMocksRecordsOneOutcomePerDevice(_ database: TestDatabase) throws {
        let rig = try DeliveryRig(database: database)
        let devices: [Device] = [
            .iOS("ios-ok-1"), .iOS("ios-ok-2"), .iOS("ios-ok-3"),
            .iOS("ios-dead", "dead", fails: "Unregistered"),
            .iOS("ios-bad", "bad", fails: "BadDeviceToken"),
            .iOS("ios-wrongtopic", "wrongtopic", fails: "DeviceTokenNotForTopic"),
            .iOS("ios-throttle", "throttle"), .iOS("ios-flaky", "flaky"),
            .iOS("ios-fail500", "fail500", fails: "InternalServerError"),
            .android("and-ok-1"), .android("and-ok-2"), .android("and-ok-3"),
            .android("and-dead", "dead", fails: "UNREGISTERED"),
            .android("and-mismatch", "mismatch", fails: "SENDER_ID_MISMATCH"),
            .android("and-invalid", "invalid", fails: "INVALID_ARGUMENT"),
            .android("and-quota", "quota"), .android("and-unavailable", "unavailable"), .android("and-internal", "internal"),
        ]
        for device in devices { try rig.register(device.hwid, platform: device.platform, token: device.token) }

        // ios_ttl bounds how long the always-failing fail500 token is retried.
        let (code, funnel) = try rig.sendAndWait(["send_date": "now", "content": "Hello", "ios_ttl": 8])
        let failed = devices.filter { $0.reason != nil }
        #expect(funnel["sent"] == .int(Int64(devices.count - failed.count)), "\(funnel.text)")
        #expect(funnel["failed"] == .int(Int64(failed.count)), "\(funnel.text)")
        #expect(funnel["throttled"] == 0)
        let targeted = funnel["targeted"]?.lenientInt
        #expect(targeted == Int64(devices.count))
        #expect(targeted == (funnel["sent"]?.lenientInt ?? 0) + (funnel["failed"]?.lenientInt ?? 0) + (funnel["throttled"]?.lenientInt ?? 0))
        #expect(funnel["errors"] == Self.errors(devices), "\(funnel.text)")

        // Exactly one delivery row per device, with the status and reason of its last reply.
        let rows = try rig.deliveries(code)
        #expect(rows.count == devices.count)
        #expect(Set(rows.map(\.hwid)).count == rows.count)
        for device in devices {
            let row = rows.first { $0.hwid == device.hwid }
            #expect(row?.status == (device.reason == nil ? "sent" : "failed"), "\(device.hwid)")
            #expect(row?.reason == device.reason, "\(device.hwid)")
        }

        // What the mocks saw: retried tokens were rejected first, then accepted once.
        func replies(_ hwid: String, _ mock: MockServer) throws -> [Int64] {
            Self.statuses(try mock.records(token: devices.first { $0.hwid == hwid }!.token))
        }
        #expect(try replies("ios-throttle", rig.apns) == [429, 429, 200])
        #expect(try replies("ios-flaky", rig.apns) == [503, 200])
        // Retried with back-off (1 s, 1–2 s, 2–4 s, 4–8 s) until the next wait would pass the 8 s expiry.
        let fail500 = try replies("ios-fail500", rig.apns)
        #expect(fail500.count >= 3 && fail500.count <= 5 && Set(fail500) == [500], "\(fail500)")
        for hwid in ["ios-ok-1", "ios-ok-2", "ios-ok-3"] { #expect(try replies(hwid, rig.apns) == [200]) }
        #expect(try replies("ios-dead", rig.apns) == [410])
        #expect(try replies("ios-bad", rig.apns) == [400])
        #expect(try replies("ios-wrongtopic", rig.apns) == [400])
        #expect(try replies("and-quota", rig.fcm) == [429, 200])
        #expect(try replies("and-unavailable", rig.fcm) == [503, 200])
        #expect(try replies("and-internal", rig.fcm) == [500, 200])
        for hwid in ["and-ok-1", "and-ok-2", "and-ok-3"] { #expect(try replies(hwid, rig.fcm) == [200]) }
        #expect(try replies("and-dead", rig.fcm) == [404])
        #expect(try replies("and-mismatch", rig.fcm) == [403])
        #expect(try replies("and-invalid", rig.fcm) == [400])

        let apnsStats = try rig.apns.stats()
        #expect(apnsStats["rejected"] == [
            "Unregistered": 1, "BadDeviceToken": 1, "DeviceTokenNotForTopic": 1, "TooManyRequests": 2, "ServiceUnavailable": 1,
            "InternalServerError": .int(Int64(fail500.count)),
        ], "\(apnsStats.text)")
        #expect(apnsStats["accepted"] == 5)
        let fcmStats = try rig.fcm.stats()
        #expect(fcmStats["rejected"] == [
            "UNREGISTERED": 1, "SENDER_ID_MISMATCH": 1, "INVALID_ARGUMENT": 1, "QUOTA_EXCEEDED": 1, "UNAVAILABLE": 1, "INTERNAL": 1,
        ], "\(fcmStats.text)")
        #expect(fcmStats["accepted"] == 6)
    }

    // MARK: - 2. Token hygiene

    @Test func deadTokensAreNotTargetedAgainUntilTheDeviceRegistersANewOne() throws {
        let rig = try DeliveryRig()
        let devices: [Device] = [
            .iOS("ios-ok"), .iOS("ios-dead", "dead", fails: "Unregistered"), .iOS("ios-bad", "bad", fails: "BadDeviceToken"),
            .iOS("ios-wrongtopic", "wrongtopic", fails: "DeviceTokenNotForTopic"),
            .android("and-ok"), .android("and-dead", "dead", fails: "UNREGISTERED"),
            .android("and-mismatch", "mismatch", fails: "SENDER_ID_MISMATCH"), .android("and-invalid", "invalid", fails: "INVALID_ARGUMENT"),
        ]
        for device in devices { try rig.register(device.hwid, platform: device.platform, token: device.token) }

        let first = try rig.sendAndWait(["send_date": "now", "content": "First"])
        #expect(first.funnel["targeted"] == 8 && first.funnel["sent"] == 2 && first.funnel["failed"] == 6, "\(first.funnel.text)")
        #expect(first.funnel["errors"] == Self.errors(devices), "\(first.funnel.text)")

        // The dead tokens are pruned; INVALID_ARGUMENT is a message problem and does not prune.
        let second = try rig.sendAndWait(["send_date": "now", "content": "Second"])
        #expect(second.funnel["targeted"] == 3 && second.funnel["sent"] == 2 && second.funnel["failed"] == 1, "\(second.funnel.text)")
        #expect(second.funnel["errors"] == ["INVALID_ARGUMENT": 1], "\(second.funnel.text)")
        #expect(try rig.deliveries(second.code).map(\.hwid) == ["and-invalid", "and-ok", "ios-ok"])
        for device in devices {
            let mock = device.platform == 1 ? rig.apns : rig.fcm
            let expected = device.reason == nil || device.reason == "INVALID_ARGUMENT" ? 2 : 1
            #expect(try mock.records(token: device.token).count == expected, "\(device.hwid)")
        }

        // A dead device that registers a new token is targeted again, with the new token.
        let renewed: [Device] = [.iOS("ios-dead", seedSuffix: "new"), .iOS("ios-bad", seedSuffix: "new"), .android("and-dead", seedSuffix: "new")]
        for device in renewed { try rig.register(device.hwid, platform: device.platform, token: device.token) }
        let third = try rig.sendAndWait(["send_date": "now", "content": "Third"])
        #expect(third.funnel["targeted"] == 6 && third.funnel["sent"] == 5 && third.funnel["failed"] == 1, "\(third.funnel.text)")
        #expect(try rig.deliveries(third.code).map(\.hwid) == ["and-dead", "and-invalid", "and-ok", "ios-bad", "ios-dead", "ios-ok"])
        for device in renewed {
            let mock = device.platform == 1 ? rig.apns : rig.fcm
            #expect(Self.statuses(try mock.records(token: device.token)) == [200], "\(device.hwid)")
        }
        for device in devices where device.hwid == "ios-dead" || device.hwid == "ios-bad" || device.hwid == "and-dead" {
            let mock = device.platform == 1 ? rig.apns : rig.fcm
            #expect(try mock.records(token: device.token).count == 1, "old token of \(device.hwid) used again")
        }
    }

    // MARK: - 3. Headers and payloads

    @Test func requestsCarryTheRightHeadersAndPayloads() throws {
        let rig = try DeliveryRig(sandbox: true)
        let sandbox = try #require(rig.sandbox)
        let production = deviceToken("", seed: "ios-production"), plain = deviceToken("", seed: "ios-plain")
        let development = deviceToken("", seed: "ios-sandbox"), android = deviceToken("", seed: "and-1")
        try rig.register("ios-production", platform: 1, token: production, gateway: "production")
        try rig.register("ios-plain", platform: 1, token: plain)
        try rig.register("ios-sandbox", platform: 1, token: development, gateway: "sandbox")
        try rig.register("and-1", platform: 3, token: android)

        let before = unixNow()
        let alert = try rig.sendAndWait([
            "send_date": "now", "content": "Hello", "ios_ttl": 3600, "ios_collapse_id": "promo-1", "data": ["order": 42],
        ])
        let after = unixNow()
        #expect(alert.funnel["sent"] == 4, "\(alert.funnel.text)")
        let hash = try #require(rig.herald.remote("getMessageDetails", message: alert.code).body["response"]?["message"]?["hash"]?.stringValue)

        // The device's gateway picks the host.
        #expect(Set(try rig.apns.records().compactMap { $0["token"]?.stringValue }) == [production, plain])
        #expect(try sandbox.records().compactMap { $0["token"]?.stringValue } == [development])

        let apnsLines = try rig.apns.records() + sandbox.records()
        #expect(apnsLines.count == 3)
        for line in apnsLines {
            #expect(line["status"] == 200)
            #expect(line["topic"] == .string(TestPKI.topic))
            #expect(line["push_type"] == "alert")
            #expect(line["priority"] == 10)
            let expiration = line["expiration"]?.lenientInt ?? 0
            #expect(expiration >= before + 3600 && expiration <= after + 3600, "\(line.text)")
            #expect(line["collapse_id"] == "promo-1")
            let payload = line["payload"] ?? .null
            #expect(payload["aps"]?["alert"] == "Hello", "\(payload.text)")
            #expect(payload["pw_msg"] == "1")
            #expect(payload["p"] == .string(hash))
            #expect(payload["u"] == #"{"order":42}"#)
        }

        // FCM: a data-only message to the device token, every data value a string.
        let fcmLines = try rig.fcm.records()
        #expect(fcmLines.count == 1)
        let message = try #require(fcmLines.first?["message"])
        #expect(fcmLines.first?["status"] == 200)
        #expect(message["token"] == .string(android))
        #expect(message["notification"] == nil, "\(message.text)")
        let data = try #require(message["data"]?.objectValue)
        #expect(data.values.allSatisfy { $0.stringValue != nil }, "\(message.text)")
        #expect(data["pw_msg"] == "1" && data["p"] == .string(hash) && data["title"] == "Hello", "\(message.text)")
        #expect(data["u"] == #"{"order":42}"#)

        // A silent push is a background push with priority 5 (APNs rejects 10) and no alert.
        let silent = try rig.sendAndWait(["send_date": "now", "content": "Sync", "ios_silent": 1, "platforms": [1]])
        #expect(silent.funnel["sent"] == 3, "\(silent.funnel.text)")
        let silentHash = try #require(rig.herald.remote("getMessageDetails", message: silent.code).body["response"]?["message"]?["hash"]?.stringValue)
        let silentLines = try (rig.apns.records() + sandbox.records()).filter { $0["payload"]?["p"] == .string(silentHash) }
        #expect(silentLines.count == 3)
        for line in silentLines {
            #expect(line["status"] == 200)
            #expect(line["push_type"] == "background")
            #expect(line["priority"] == 5)
            #expect(line["expiration"] == .null)
            #expect(line["collapse_id"] == .null)
            #expect(line["payload"]?["aps"]?["content-available"] == 1, "\(line.text)")
            #expect(line["payload"]?["aps"]?["alert"] == nil, "\(line.text)")
        }
    }

    // MARK: - 4. Provider tokens and connections are reused

    @Test func providerTokensAndConnectionsAreReused() throws {
        let rig = try DeliveryRig(workers: 2)
        for index in 0..<50 {
            try rig.register(String(format: "ios-%02d", index), platform: 1, token: deviceToken("", seed: "ios-\(index)"))
            try rig.register(String(format: "and-%02d", index), platform: 3, token: deviceToken("", seed: "and-\(index)"))
        }
        // Four messages: one shard each, so that both workers get work.
        let codes = try rig.herald.send(Array(repeating: ["send_date": "now", "content": "Hi"], count: 4))
        for code in codes {
            let funnel = try rig.herald.waitForMessage(code, timeout: 25)
            #expect(funnel["sent"] == 100, "\(funnel.text)")
        }
        let active = (0..<2).filter { rig.workerLog($0).contains("shard done") }.count
        #expect(active >= 1)

        let apns = try rig.apns.stats()
        #expect(apns["requests"] == 200 && apns["accepted"] == 200, "\(apns.text)")
        #expect((apns["tokens_seen"]?.lenientInt ?? 99) <= Int64(active), "one provider token per worker: \(apns.text)")
        #expect(apns["max_tokens_per_connection"] == 1, "\(apns.text)")
        #expect((apns["connections"]?.lenientInt ?? 99) <= Int64(2 * active), "at most 2 connections per worker: \(apns.text)")

        let fcm = try rig.fcm.stats()
        #expect(fcm["requests"] == 200 && fcm["accepted"] == 200, "\(fcm.text)")
        #expect((fcm["tokens_issued"]?.lenientInt ?? 99) <= Int64(active), "one access token per worker: \(fcm.text)")
        #expect((fcm["token_requests"]?.lenientInt ?? 99) <= Int64(active), "\(fcm.text)")
    }

    // MARK: - 5. A wrong APNs key

    @Test func aWrongAPNsKeyFailsWithInvalidProviderTokenAndSaysWhatToFix() throws {
        let keyFolder = NSTemporaryDirectory() + "herald-wrong-key-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: keyFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: keyFolder) }
        let wrongKey = keyFolder + "/apns-\(TestPKI.keyID).p8"
        try runTool("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", wrongKey])

        let rig = try DeliveryRig(apnsKeyPath: wrongKey)
        try rig.register("ios-1", platform: 1, token: deviceToken("", seed: "ios-1"))
        try rig.register("ios-2", platform: 1, token: deviceToken("", seed: "ios-2"))
        try rig.register("and-1", platform: 3, token: deviceToken("", seed: "and-1"))

        let (code, funnel) = try rig.sendAndWait(["send_date": "now", "content": "Hello"])
        #expect(funnel["sent"] == 1 && funnel["failed"] == 2, "\(funnel.text)")
        #expect(funnel["errors"] == ["InvalidProviderToken": 2], "\(funnel.text)")
        let rows = try rig.deliveries(code)
        #expect(rows.filter { $0.hwid.hasPrefix("ios-") }.map(\.reason) == ["InvalidProviderToken", "InvalidProviderToken"])

        let stats = try rig.apns.stats()
        #expect(stats["accepted"] == 0, "\(stats.text)")
        #expect(stats["rejected"]?.objectValue?.keys.sorted() == ["InvalidProviderToken"], "\(stats.text)")

        // The operator learns from the worker log which settings to check.
        let errorLines = rig.workerLog().split(separator: "\n").filter { $0.contains(" ERROR ") }
        #expect(errorLines.contains { $0.contains("apns.key_id") && $0.contains("apns.key_path") }, "\(errorLines)")
    }

    // MARK: - 6. Retries keep their apns-id and never duplicate

    @Test func retriedPushesKeepTheirAPNsIDAndAreAcceptedOnce() throws {
        let rig = try DeliveryRig()
        let devices: [Device] = [.iOS("ios-flaky-1", "flaky"), .iOS("ios-flaky-2", "flaky"), .iOS("ios-flaky-3", "flaky"),
                                 .iOS("ios-throttle", "throttle"), .iOS("ios-ok")]
        for device in devices { try rig.register(device.hwid, platform: device.platform, token: device.token) }
        let (code, funnel) = try rig.sendAndWait(["send_date": "now", "content": "Hello"])
        #expect(funnel["sent"] == 5 && funnel["failed"] == 0, "\(funnel.text)")
        #expect(try rig.deliveries(code).map(\.status) == Array(repeating: "sent", count: 5))

        let uuid = try Regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
        var ids: Set<String> = []
        for device in devices {
            let lines = try rig.apns.records(token: device.token)
            let expected: [Int64] = device.hwid.contains("flaky") ? [503, 200] : device.hwid.contains("throttle") ? [429, 429, 200] : [200]
            #expect(Self.statuses(lines) == expected, "\(device.hwid)")
            let sentIDs = Set(lines.compactMap { $0["apns_id"]?.stringValue })
            #expect(sentIDs.count == 1, "\(device.hwid): every attempt carries the same apns-id, got \(sentIDs)")
            if let id = sentIDs.first {
                #expect(id.wholeMatch(of: uuid) != nil, "\(id)")
                ids.insert(id)
            }
        }
        #expect(ids.count == devices.count, "each device has its own apns-id")
    }
}

extension DeliveryTests.Device {
    /// The same device with a fresh normal token (what the app gets after reinstalling).
    static func iOS(_ hwid: String, seedSuffix: String) -> Self {
        Self(hwid: hwid, platform: 1, token: deviceToken("", seed: hwid + "-" + seedSuffix), reason: nil)
    }
    static func android(_ hwid: String, seedSuffix: String) -> Self {
        Self(hwid: hwid, platform: 3, token: deviceToken("", seed: hwid + "-" + seedSuffix), reason: nil)
    }
}
