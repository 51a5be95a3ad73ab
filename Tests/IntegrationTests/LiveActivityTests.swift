import Foundation
import Testing
import Core
import SDKClient
import TestSupport

/// Live Activities against the real herald-ingest and herald-worker and the APNs mock, which checks
/// each push as a device would: a device registers its tokens through the Device API, and the Remote
/// API starts, updates and ends its activity; every push the mock recorded is checked field by field.
@Suite(.serialized) struct LiveActivityTests {
    static let app = HeraldProcesses.appCode
    static let topic = TestPKI.topic + ".push-type.liveactivity"

    /// `startLiveActivity` / `updateLiveActivity` for the Shop app with one notification.
    static func call(_ herald: HeraldProcesses, _ method: String, _ notification: JSON) throws -> (status: Int, body: JSON) {
        try herald.call(method, ["application": .string(app), "auth": .string(HeraldProcesses.apiToken), "notifications": [notification]])
    }

    /// A call that must succeed; returns its message code once the message is done, with its funnel.
    static func send(_ herald: HeraldProcesses, _ method: String, _ notification: JSON) throws -> (code: String, funnel: JSON) {
        let (status, body) = try call(herald, method, notification)
        let codes = body["response"]?["Messages"]?.arrayValue?.compactMap(\.stringValue) ?? []
        guard status == 200, body["status_code"] == 200, codes.count == 1 else {
            throw HTTPClient.Failure(description: "\(method) failed: HTTP \(status) \(body.text)")
        }
        return (codes[0], try herald.waitForMessage(codes[0]))
    }

    static func hash(_ herald: HeraldProcesses, _ code: String) throws -> String {
        try #require(try herald.query("SELECT hash FROM messages WHERE code = '\(code)'", columns: 1).first?.first ?? nil)
    }

    static func update(_ event: String, _ state: JSON, _ extra: [String: JSON] = [:], id: String = "match-7") -> JSON {
        .object(["live_activity_id": .string(id), "live_activity": .object(["event": .string(event), "content-state": state].merging(extra) { $1 })])
    }

    @Test(arguments: TestDatabase.tested) func anActivityIsStartedUpdatedAndEndedWithEveryPushCheckedAtTheMock(_ database: TestDatabase) throws {
        // One push per device per hour: updates and the end of a running activity are not capped.
        let rig = try DeliveryRig(throttle: (count: 1, windowSeconds: 3600), database: database)
        let herald = rig.herald
        let startToken = deviceToken("", seed: "la-start"), otherStart = deviceToken("", seed: "la-other-start")
        let activityToken = deviceToken("", seed: "la-activity")
        for (hwid, token) in [("la-phone", startToken), ("la-other", otherStart)] {
            try rig.register(hwid, platform: 1, token: deviceToken("", seed: hwid))
            try herald.ok("setActivityPushToStartToken", ["application": .string(Self.app), "hwid": .string(hwid),
                                                          "activity_push_to_start_token": .string(token)])
        }

        // The start goes to the push-to-start token of the device asked for.
        let before = unixNow()
        let (start, startFunnel) = try Self.send(herald, "startLiveActivity", [
            "content": "Kick-off!", "title": "Match", "devices": ["la-phone"], "live_activity_id": "match-7",
            "live_activity": [
                "content-state": ["score": "0-0"], "attributes-type": "MatchAttributes", "attributes": ["home": "Oslo", "away": "Bergen"],
            ],
        ])
        #expect(startFunnel["targeted"] == 1 && startFunnel["sent"] == 1, "\(startFunnel.text)")
        let started = try rig.apns.records(token: startToken)
        let othersStarted = try rig.apns.records(token: otherStart)
        #expect(started.count == 1 && othersStarted.isEmpty)
        let startPush = try #require(started.first)
        #expect(startPush["status"] == 200 && startPush["topic"] == .string(Self.topic) && startPush["push_type"] == "liveactivity")
        #expect(startPush["priority"] == 10 && startPush["expiration"] == .null && startPush["collapse_id"] == .null)
        let startTimestamp = try #require(startPush["payload"]?["aps"]?["timestamp"]?.lenientInt)
        #expect((before...unixNow()).contains(startTimestamp))
        #expect(startPush["payload"] == [
            "pw_msg": "1", "p": .string(try Self.hash(herald, start)),
            "aps": [
                "timestamp": .int(startTimestamp), "event": "start", "content-state": ["score": "0-0"],
                "attributes-type": "MatchAttributes", "attributes": ["home": "Oslo", "away": "Bergen"],
                "alert": ["title": "Match", "body": "Kick-off!"],
            ],
        ], "\(startPush.text)")

        // The app registers the started activity's token; two updates sent back to back reach it
        // with increasing timestamps, the second at priority 5 with an expiry.
        try herald.ok("setActivityToken", ["application": .string(Self.app), "hwid": "la-phone", "activity_id": "match-7",
                                           "activity_token": .string(activityToken)])
        let stale = unixNow() + 600
        let (first, firstFunnel) = try Self.send(herald, "updateLiveActivity", Self.update("update", ["score": "1-0"], ["stale-date": .int(stale)]))
        var second = Self.update("update", ["score": "2-0"]).objectValue ?? [:]
        second["priority"] = 5
        second["ios_ttl"] = 120
        let sentAt = unixNow()
        let (secondCode, secondFunnel) = try Self.send(herald, "updateLiveActivity", .object(second))
        #expect(firstFunnel["sent"] == 1 && secondFunnel["sent"] == 1 && secondFunnel["throttled"] == 0, "\(secondFunnel.text)")
        let updates = try rig.apns.records(token: activityToken)
        #expect(updates.count == 2)
        let firstPush = try #require(updates.first { $0["payload"]?["p"] == .string(try Self.hash(herald, first)) })
        let secondPush = try #require(updates.first { $0["payload"]?["p"] == .string(try Self.hash(herald, secondCode)) })
        let firstTimestamp = try #require(firstPush["payload"]?["aps"]?["timestamp"]?.lenientInt)
        let secondTimestamp = try #require(secondPush["payload"]?["aps"]?["timestamp"]?.lenientInt)
        #expect(startTimestamp < firstTimestamp && firstTimestamp < secondTimestamp)
        #expect(firstPush["payload"]?["aps"] == [
            "timestamp": .int(firstTimestamp), "event": "update", "content-state": ["score": "1-0"], "stale-date": .int(stale),
        ])
        #expect(secondPush["payload"]?["aps"] == ["timestamp": .int(secondTimestamp), "event": "update", "content-state": ["score": "2-0"]])
        for push in [firstPush, secondPush] {
            #expect(push["status"] == 200 && push["topic"] == .string(Self.topic) && push["push_type"] == "liveactivity")
        }
        #expect(firstPush["priority"] == 10 && firstPush["expiration"] == .null)
        #expect(secondPush["priority"] == 5)
        let expiration = try #require(secondPush["expiration"]?.lenientInt)
        #expect((sentAt + 120...unixNow() + 120).contains(expiration))

        // The end, with its dismissal date; the token it went to becomes inactive.
        let dismissal = unixNow() + 300
        let (end, endFunnel) = try Self.send(herald, "updateLiveActivity", Self.update("end", ["score": "3-1"], ["dismissal-date": .int(dismissal)]))
        #expect(endFunnel["targeted"] == 1 && endFunnel["sent"] == 1, "\(endFunnel.text)")
        let endPush = try #require(try rig.apns.records(token: activityToken).first { $0["payload"]?["p"] == .string(try Self.hash(herald, end)) })
        let endTimestamp = try #require(endPush["payload"]?["aps"]?["timestamp"]?.lenientInt)
        #expect(endTimestamp > secondTimestamp)
        #expect(endPush["payload"]?["aps"] == [
            "timestamp": .int(endTimestamp), "event": "end", "content-state": ["score": "3-1"], "dismissal-date": .int(dismissal),
        ])
        #expect(endPush["status"] == 200 && endPush["topic"] == .string(Self.topic) && endPush["priority"] == 10)
        #expect(try herald.stores().devices.activityTokens(app: Self.app, hwid: "la-phone").map { "\($0.token == activityToken) \($0.active)" }
                == ["false true", "true false"])

        // An ended activity takes no more updates: 210, and nothing is stored.
        let messages = try herald.messageCount()
        for event in ["update", "end"] {
            let (status, body) = try Self.call(herald, "updateLiveActivity", Self.update(event, ["score": "4-1"]))
            #expect(status == 200 && body["status_code"] == 210)
            #expect(body["status_message"] == "notifications[0].live_activity_id: activity \"match-7\" has ended; it takes no more updates")
        }
        #expect(try herald.messageCount() == messages)
        #expect(try rig.apns.records(token: activityToken).count == 3)

        // Another start to the same device is a push like any other: the device's cap holds it back.
        let (_, capped) = try Self.send(herald, "startLiveActivity", [
            "content": "Next match", "devices": ["la-phone"], "live_activity_id": "match-8",
            "live_activity": ["content-state": ["score": "0-0"], "attributes-type": "MatchAttributes", "attributes": [:]],
        ])
        #expect(capped["targeted"] == 1 && capped["throttled"] == 1 && capped["sent"] == 0, "\(capped.text)")
        #expect(try rig.apns.records(token: startToken).count == 1)

        // The message details show the funnel too.
        let (_, details) = try herald.remote("getMessageDetails", message: end)
        #expect(details["response"]?["message"]?["sent"] == 1 && details["response"]?["message"]?["status"] == "done", "\(details.text)")
    }

    @Test(arguments: TestDatabase.tested) func badOrUnknownActivitiesAre210NamingTheFieldAndStoreNothing(_ database: TestDatabase) throws {
        let herald = try HeraldProcesses(database: database)
        try herald.startIngest()
        try herald.ok("setActivityToken", ["application": .string(Self.app), "hwid": "la-x", "device_type": 1, "activity_id": "known",
                                           "activity_token": "ab12"])
        let state: JSON = ["content-state": ["n": 1], "attributes-type": "T", "attributes": [:]]
        let cases: [(String, JSON, String)] = [
            ("startLiveActivity", ["live_activity": state], "notifications[0].live_activity_id: is required"),
            ("startLiveActivity", ["live_activity_id": "", "live_activity": state], "notifications[0].live_activity_id: is required"),
            ("startLiveActivity", ["live_activity_id": .string(String(repeating: "x", count: 257)), "live_activity": state],
             "notifications[0].live_activity_id: is longer than 256 bytes"),
            ("startLiveActivity", ["live_activity_id": "a"], "notifications[0].live_activity: is required"),
            ("startLiveActivity", ["live_activity_id": "a", "live_activity": ["attributes-type": "T", "attributes": [:]]],
             "notifications[0].live_activity.content-state: is required"),
            ("startLiveActivity", ["live_activity_id": "a", "live_activity": ["content-state": "n=1", "attributes-type": "T", "attributes": [:]]],
             "notifications[0].live_activity.content-state: must be an object, found string"),
            ("startLiveActivity", ["live_activity_id": "a", "live_activity": ["content-state": [:], "attributes": [:]]],
             "notifications[0].live_activity.attributes-type: is required"),
            ("startLiveActivity", ["live_activity_id": "a", "live_activity": ["content-state": [:], "attributes-type": "T"]],
             "notifications[0].live_activity.attributes: is required"),
            ("startLiveActivity", ["live_activity_id": "a", "live_activity": state, "priority": 7], "notifications[0].priority: must be 5 or 10"),
            ("startLiveActivity", ["live_activity_id": "a", "live_activity": state, "send_date": "2099-01-01 10:00"],
             "notifications[0].send_date: a Live Activity push goes out at once"),
            ("startLiveActivity", ["live_activity_id": "a", "live_activity": state, "filter_code": "f1"],
             "notifications[0].filter_code: saved filters are not supported"),
            ("startLiveActivity", ["live_activity_id": "a", "live_activity": state, "conditions": [["Level", "GTE"]]],
             "notifications[0].conditions[0]"),
            ("updateLiveActivity", ["live_activity_id": "known", "live_activity": ["content-state": [:]]],
             "notifications[0].live_activity.event: is required (update or end)"),
            ("updateLiveActivity", ["live_activity_id": "known", "live_activity": ["event": "pause", "content-state": [:]]],
             "notifications[0].live_activity.event: must be update or end, found \"pause\""),
            ("updateLiveActivity", ["live_activity_id": "known", "live_activity": ["event": "end"]],
             "notifications[0].live_activity.content-state: is required"),
            ("updateLiveActivity", ["live_activity_id": "known", "live_activity": ["event": "end", "content-state": [:], "dismissal-date": "soon"]],
             "notifications[0].live_activity.dismissal-date: must be an integer"),
            ("updateLiveActivity", ["live_activity_id": "known", "live_activity": ["event": "update", "content-state": [:], "dismissal-date": 5]],
             "notifications[0].live_activity.dismissal-date: only an end takes a dismissal-date"),
            ("updateLiveActivity", ["live_activity_id": "known", "live_activity": ["event": "update", "content-state": [:]], "devices": ["la-x"]],
             "notifications[0].devices: an update goes to every token registered for the activity"),
            ("updateLiveActivity", ["live_activity": ["event": "update", "content-state": [:]]], "notifications[0].live_activity_id: is required"),
            ("updateLiveActivity", Self.update("update", [:], id: "unknown"),
             "notifications[0].live_activity_id: no device registered a token for activity \"unknown\""),
        ]
        for (method, notification, problem) in cases {
            let (status, body) = try Self.call(herald, method, notification)
            #expect(status == 200 && body["status_code"] == 210, "\(method) \(notification.text)")
            #expect(body["status_message"]?.stringValue?.hasPrefix(problem) == true, "\(body.text) should start with \(problem)")
        }
        // The refusal of one notification refuses the call: the good notification before it is not stored either.
        let (_, mixed) = try herald.call("updateLiveActivity", [
            "application": .string(Self.app), "auth": .string(HeraldProcesses.apiToken),
            "notifications": [Self.update("update", [:], id: "known"), Self.update("update", [:], id: "unknown")],
        ])
        #expect(mixed["status_code"] == 210 && mixed["status_message"]?.stringValue?.hasPrefix("notifications[1].live_activity_id:") == true)
        #expect(try herald.messageCount() == 0)
        #expect(try herald.count("SELECT count(*) FROM live_activities") == 0)
        // A wrong token is refused like createMessage's.
        let (denied, _) = try herald.call("updateLiveActivity", [
            "application": .string(Self.app), "auth": "wrong", "notifications": [Self.update("update", [:], id: "known")],
        ])
        #expect(denied == 403)
        // The good notification alone is accepted.
        let (_, accepted) = try Self.call(herald, "updateLiveActivity", Self.update("update", ["n": 2], id: "known"))
        #expect(accepted["status_code"] == 200 && accepted["response"]?["Messages"]?.arrayValue?.count == 1)
        #expect(try herald.messageCount() == 1)
    }
}
