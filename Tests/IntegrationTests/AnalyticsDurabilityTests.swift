import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Reports acknowledged to the SDKs survive kill -9 of every Herald process, and each open or
/// delivery counts once per (message, device) however often the SDK retries.
@Suite(.serialized) struct AnalyticsDurabilityTests {
    @Test(arguments: TestDatabase.tested) func acknowledgedReportsSurviveKill9OfEveryProcess(_ database: TestDatabase) throws {
        let herald = try HeraldProcesses(database: database)
        try herald.startIngest()
        let app = HeraldProcesses.appCode
        for index in 0..<10 { try herald.register(SDKDevice("r-\(index)", platform: index < 5 ? 1 : 3)) }
        try herald.startWorker()
        try herald.waitForWorkers(1)
        let code = try herald.send(["content": "Flash sale"])
        _ = try herald.waitForMessage(code)
        let line = try #require(try herald.sink(code).first)
        let hash = try #require(line["payload"]?["p"]?.stringValue ?? line["payload"]?["message"]?["data"]?["p"]?.stringValue)

        // Deliveries from 6 devices, each sent twice (SDK retries); opens from 3, one of them three times.
        for index in 0..<6 {
            for _ in 0..<2 {
                try herald.ok("messageDeliveryEvent", ["application": .string(app), "hwid": .string("r-\(index)"), "hash": .string(hash)])
            }
        }
        for (index, times) in [(0, 3), (1, 1), (7, 1)] {
            for _ in 0..<times {
                try herald.ok("pushStat", ["application": .string(app), "hwid": .string("r-\(index)"), "hash": .string(hash)])
            }
        }
        // Events as iOS types them (numbers as strings) and as Android does.
        let now = unixNow()
        try herald.ok("postEvent", ["application": .string(app), "hwid": "r-0", "device_type": 1, "event": "PW_UserIdle",
                                    "attributes": ["idle_seconds": "20", "session_duration": "60"], "timestampUTC": .int(now), "timestampCurrent": .int(now)])
        try herald.ok("postEvent", ["application": .string(app), "hwid": "r-6", "device_type": 3, "event": "PW_UserIdle",
                                    "attributes": ["idle_seconds": 40, "session_duration": 120], "timestampUTC": .int(now), "timestampCurrent": .int(now)])
        try herald.ok("postEvent", ["application": .string(app), "hwid": "r-6", "device_type": 3, "event": "PW_ScreenOpen",
                                    "attributes": ["screen_name": "Home"], "timestampUTC": .int(now), "timestampCurrent": .int(now)])

        // kill -9 everything right after the replies, then start again.
        herald.killWorker(0)
        herald.stopIngest(signal: SIGKILL)
        try herald.startIngest()

        // Right after the restart some reports are folded into the rollups and some are not; once a
        // worker has processed them all, the same counts come from the rollups (the day-aligned window).
        try expectCounts(herald, code: code, now: now, "after the restart")
        try herald.startWorker()
        try herald.waitForReportsProcessed()
        try expectCounts(herald, code: code, now: now, "after processing")
    }

    func expectCounts(_ herald: HeraldProcesses, code: String, now: Int64, _ comment: Comment) throws {
        let app = HeraldProcesses.appCode
        let funnel = try herald.funnel(code).body
        #expect(funnel["sent"] == 10, comment)
        #expect(funnel["delivered"] == 6, comment)
        #expect(funnel["opened"] == 3, comment)
        let today = now - now % 86_400
        for (from, to) in [(now - 60, now + 60), (today, today + 86_400)] {
            let response = try herald.client.request("GET", "/api/v1/apps/\(app)/events?from=\(from)&to=\(to)",
                                                     headers: [("Authorization", "Token shop-secret")])
            let events = try JSON.parse(response.body)
            #expect(events["events"] == [["name": "PW_UserIdle", "count": 2, "devices": 2], ["name": "PW_ScreenOpen", "count": 1, "devices": 1]],
                    comment)
            #expect(events["sessions"]?["count"] == 2, comment)
            #expect(events["sessions"]?["average_duration_seconds"]?.lenientDouble == 90, comment)
            #expect(events["sessions"]?["average_idle_seconds"]?.lenientDouble == 30, comment)
            #expect(events["screens"] == [["screen_name": "Home", "count": 1]], comment)
            #expect(events["days"]?.arrayValue?.count == 1 && events["days"]?.arrayValue?.first?["devices"] == 2, comment)
        }
    }
}
