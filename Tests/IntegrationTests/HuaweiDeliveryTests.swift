import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// Real delivery to Huawei devices (`device_type` 17): the Shop app configured with a `huawei` block,
/// the real `herald-ingest` and `herald-worker`, and the loopback Push Kit mock of `ops/mocks` over
/// HTTP/2 + TLS. What is checked is what an operator would check: the funnel, the `deliveries` table,
/// and what the mock received. Every wait is bounded.
@Suite(.serialized) struct HuaweiDeliveryTests {
    static let appID = "104567890"

    /// Herald whose Shop app delivers through a Huawei Push Kit mock only.
    final class Rig {
        let folder: String
        let huawei: MockServer
        let herald: HeraldProcesses

        /// - Parameter wrongSecret: Herald is given another client secret than the mock accepts.
        init(database: TestDatabase, wrongSecret: Bool = false) throws {
            folder = NSTemporaryDirectory() + "herald-huawei-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let pki = try TestPKI.shared()
            let secret = folder + "/huawei-secret"
            try Data("client-secret-\(UUID().uuidString)\n".utf8).write(to: URL(fileURLWithPath: secret))
            let heraldSecret = wrongSecret ? folder + "/other-secret" : secret
            if wrongSecret { try Data("not-the-secret".utf8).write(to: URL(fileURLWithPath: heraldSecret)) }
            huawei = try MockServer.huawei(pki: pki, folder: folder, appID: HuaweiDeliveryTests.appID, secretFile: secret,
                                           extra: ["--unavailable-count", "3"])
            herald = try HeraldProcesses(shopDelivery: [
                "huawei": [
                    "app_id": .string(HuaweiDeliveryTests.appID), "client_secret_file": .string(heraldSecret),
                    "token_url": .string(huawei.url + "/oauth2/v3/token"), "endpoint": .string(huawei.url),
                    "ca_file": .string(pki + "/ca.pem"),
                ],
            ], database: database)
            try herald.startIngest()
            try herald.startWorker()
            try herald.waitForWorkers(1)
        }

        deinit {
            huawei.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }

        func register(_ hwid: String, platform: Int, token: String) throws {
            try herald.ok("registerDevice", [
                "application": .string(HeraldProcesses.appCode), "hwid": .string(hwid), "device_type": .int(Int64(platform)),
                "push_token": .string(token),
            ])
        }

        func sendAndWait(_ notification: JSON) throws -> (code: String, funnel: JSON) {
            let code = try herald.send(notification)
            return (code, try herald.waitForMessage(code, timeout: 30))
        }


        func statuses(_ token: String) throws -> [Int64] {
            try huawei.records(token: token).compactMap { $0["status"]?.lenientInt }
        }
    }

    @Test(arguments: TestDatabase.tested) func aCampaignForHuaweiReachesItsDevicesPrunesDeadTokensAndRenewsTheAccessToken(
        _ database: TestDatabase
    ) throws {
        let rig = try Rig(database: database)
        let ok = (1...3).map { ("hw-ok-\($0)", deviceToken("", seed: "hw-ok-\($0)")) }
        let dead = ("hw-dead", deviceToken("dead", seed: "hw-dead"))
        let illegal = ("hw-illegal", deviceToken("illegal", seed: "hw-illegal"))
        let busy = ("hw-busy", deviceToken("unavailable", seed: "hw-busy"))
        for (hwid, token) in ok + [dead, illegal, busy] { try rig.register(hwid, platform: Platform.huawei, token: token) }
        // Not targeted by `platforms: [17]`.
        try rig.register("and-1", platform: Platform.android, token: deviceToken("", seed: "and-1"))
        try rig.register("ios-1", platform: Platform.iOS, token: deviceToken("", seed: "ios-1"))

        let first = try rig.sendAndWait(["send_date": "now", "content": "Hello", "title": "Shop", "platforms": [17],
                                         "link": "https://example.com/sale", "android_gcm_ttl": 600])
        #expect(first.funnel["targeted"] == 6 && first.funnel["sent"] == 4 && first.funnel["failed"] == 2, "\(first.funnel.text)")
        #expect(first.funnel["errors"] == ["80300007": 1, "80100000": 1], "\(first.funnel.text)")
        let rows = try rig.herald.deliveriesByDevice(first.code)
        #expect(Set(rows.keys) == Set((ok + [dead, illegal, busy]).map(\.0)))
        #expect(rows["hw-dead"]?.status == "failed" && rows["hw-dead"]?.reason == "80300007")
        #expect(rows["hw-illegal"]?.status == "failed" && rows["hw-illegal"]?.reason == "80100000")
        for hwid in ok.map(\.0) + ["hw-busy"] { #expect(rows[hwid]?.status == "sent", "\(hwid)") }

        // The 503 burst (Push Kit's flow control) was retried until accepted; the dead tokens were tried once.
        #expect(try rig.statuses(busy.1) == [503, 503, 503, 200])
        #expect(try rig.statuses(dead.1) == [400])
        #expect(try rig.statuses(illegal.1) == [200])
        for (_, token) in ok { #expect(try rig.statuses(token) == [200]) }

        // What a device received: the Android SDK's data map as JSON text, the TTL, normal urgency.
        let record = try #require(try rig.huawei.records(token: ok[0].1).first)
        #expect(record["app_id"] == .string(Self.appID))
        let message = try #require(record["message"])
        #expect(message["token"] == .array([.string(ok[0].1)]))
        #expect(message["android"] == ["urgency": "NORMAL", "ttl": "600s"])
        let data = try JSON.parse(Array(try #require(message["data"]?.stringValue).utf8))
        #expect(data["pw_msg"] == "1" && data["title"] == "Hello" && data["header"] == "Shop" && data["l"] == "https://example.com/sale")
        #expect((data["p"]?.stringValue ?? "").isEmpty == false)
        var stats = try rig.huawei.stats()
        #expect(stats["tokens_issued"] == 1 && stats["token_requests"] == 1, "one access token for the campaign: \(stats.text)")

        // The access token expires at Push Kit: the next campaign gets 80200003, renews it once and
        // goes on. The pruned tokens are not targeted again, and a filter by platform name works.
        try rig.huawei.admin("POST", "/expire-tokens")
        let filter = #"A("\#(HeraldProcesses.appCode)", ["Huawei"])"#
        let second = try rig.herald.ok("createTargetedMessage", [
            "auth": .string(HeraldProcesses.apiToken), "send_date": "now", "content": "Again", "devices_filter": .string(filter),
        ])
        let secondCode = try #require(second["messageCode"]?.stringValue, "\(second.text)")
        let funnel = try rig.herald.waitForMessage(secondCode, timeout: 30)
        #expect(funnel["targeted"] == 4 && funnel["sent"] == 4 && funnel["failed"] == 0, "\(funnel.text)")
        stats = try rig.huawei.stats()
        #expect(stats["tokens_issued"] == 2 && stats["token_requests"] == 2, "\(stats.text)")
        let expired = stats["rejected"]?["80200003"]?.lenientInt ?? 0
        #expect(expired >= 1 && expired <= 4, "\(stats.text)")
        #expect(try rig.statuses(dead.1) == [400] && rig.statuses(illegal.1) == [200])

        // /metrics names the provider (the workers' counters ride on their next heartbeat, every second).
        var metrics = ""
        for _ in 0..<50 {
            metrics = try rig.herald.client.request("GET", "/metrics").text
            if metrics.contains(#"provider="huawei",outcome="sent"} 8"#) { break }
            usleep(100_000)
        }
        #expect(metrics.contains(#"provider="huawei",outcome="sent"} 8"#), "\(metrics)")
        #expect(metrics.contains(#"provider="huawei",outcome="failed"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"herald_push_retries_total{"#) && metrics.contains(#"provider="huawei",reason="81000001"} 3"#), "\(metrics)")
    }

    @Test func aRefusedClientSecretFailsThePushesAndTheLogNamesTheKeys() throws {
        let rig = try Rig(database: .configured, wrongSecret: true)
        try rig.register("hw-1", platform: Platform.huawei, token: deviceToken("", seed: "hw-1"))
        let (_, funnel) = try rig.sendAndWait(["send_date": "now", "content": "Hello"])
        #expect(funnel["targeted"] == 1 && funnel["failed"] == 1 && funnel["errors"] == ["AccessTokenError": 1], "\(funnel.text)")
        let stats = try rig.huawei.stats()
        #expect(stats["token_rejected"] == ["1101/20058": 1] && stats["requests"] == 0, "\(stats.text)")
        let log = (try? String(contentsOfFile: rig.herald.workerLogPath(0), encoding: .utf8)) ?? ""
        #expect(log.contains("huawei.client_secret_file") && !log.contains("not-the-secret"), "\(log)")
    }

    @Test func huaweiDevicesOfAnAppWithoutAHuaweiSectionFailWithAClearReason() throws {
        let rig = try DeliveryRig()
        try rig.register("hw-1", platform: Platform.huawei, token: deviceToken("", seed: "hw-1"))
        try rig.register("and-1", platform: Platform.android, token: deviceToken("", seed: "and-1"))
        let (code, funnel) = try rig.sendAndWait(["send_date": "now", "content": "Hello"])
        #expect(funnel["targeted"] == 2 && funnel["sent"] == 1 && funnel["failed"] == 1, "\(funnel.text)")
        #expect(funnel["errors"] == ["HuaweiNotConfigured": 1], "\(funnel.text)")
        let rows = try rig.deliveries(code)
        #expect(rows.first { $0.hwid == "hw-1" }?.reason == "HuaweiNotConfigured")
    }
}
