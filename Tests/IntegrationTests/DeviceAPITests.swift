import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// The Device API as the Pushwoosh SDKs use it, against the real `herald-ingest` and a real database.
@Suite(.serialized) struct DeviceAPITests {
    let herald: HeraldProcesses
    static let app = HeraldProcesses.appCode

    init() throws {
        herald = try HeraldProcesses()
        try herald.startIngest()
    }

    /// The base fields the iOS SDK 7.x sends with every call.
    func iOS(_ hwid: String, _ extra: [String: JSON] = [:]) -> JSON {
        var fields: [String: JSON] = ["application": .string(Self.app), "hwid": .string(hwid), "v": "7.1.3", "device_type": 1,
                                      "userId": .string(hwid)]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    /// The base fields the Android SDK 6.x sends.
    func android(_ hwid: String, _ extra: [String: JSON] = [:]) -> JSON {
        var fields: [String: JSON] = ["application": .string(Self.app), "hwid": .string(hwid), "v": "6.10.0", "device_type": 3]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    func tags(_ hwid: String) throws -> JSON {
        try herald.ok("getTags", iOS(hwid))["result"] ?? .null
    }

    @Test func iOSRegistrationWithTagsIsReadBackTyped() throws {
        try herald.ok("registerDevice", iOS("A1B2C3D4-0000-0000-0000-000000000001", [
            "push_token": "6f1e4c0b9a1d2e3f4a5b6c7d8e9f00112233445566778899aabbccddeeff0011", "gateway": "sandbox",
            "timezone": "10800", "language": "zh-Hans", "app_version": "2.3", "os_version": "17.4", "device_model": "iPhone15,2",
            "package": "com.example.shop", "notificationTypes": 7, "sounds": ["a.caf"],
            "tags": ["Level": 3, "Name": "Ann", "Interests": ["shoes", "bags"], "Signup": "2024-05-06 07:08", "Premium": false, "Balance": 12.5],
        ]))
        let result = try tags("A1B2C3D4-0000-0000-0000-000000000001")
        #expect(result == ["Level": 3, "Name": "Ann", "Interests": ["shoes", "bags"], "Signup": "2024-05-06 07:08",
                           "Premium": false, "Balance": 12.5])
    }

    @Test func androidRegistrationWithIntegerTimezone() throws {
        try herald.ok("registerDevice", android("5e2f4c1a-aaaa-bbbb-cccc-000000000001", [
            "push_token": "fcm:APA91bH-token", "timezone": -18000, "language": "en", "android_package": "com.example.shop",
            "device_name": "Phone",
        ]))
        #expect(try tags("5e2f4c1a-aaaa-bbbb-cccc-000000000001") == [:])
    }

    @Test func setTagsOperationsAndGetTagsRightAfter() throws {
        let hwid = "ops-device"
        try herald.ok("registerDevice", android(hwid, ["push_token": "t-ops", "tags": ["Count": 1, "Cart": ["a"], "Temp": "x"]]))
        try herald.ok("setTags", android(hwid, ["tags": [
            "Count": ["operation": "increment", "value": 4],
            "Cart": ["operation": "append", "value": ["b", "c"]],
            "Temp": nil,
            "Seen": "2025-01-31 23:59",
        ]]))
        #expect(try tags(hwid) == ["Count": 5, "Cart": ["a", "b", "c"], "Seen": "2025-01-31 23:59"])
        try herald.ok("setTags", android(hwid, ["tags": ["Cart": ["operation": "remove", "value": ["a"]]]]))
        #expect(try tags(hwid)["Cart"] == ["b", "c"])
    }

    /// Requests PostgreSQL cannot batch (a user, a list, an increment) run again on a request
    /// thread; the first run, stopped before it reached the database, is no error and logs none.
    @Test func requestsThatRunAgainLogNoError() throws {
        try herald.ok("registerDevice", iOS("again-1", ["push_token": "t-again", "tags": ["Cart": ["a"], "Count": 1]]))
        try herald.ok("setTags", iOS("again-1", ["tags": ["Count": ["operation": "increment", "value": 2]]]))
        try herald.ok("registerUser", iOS("again-1", ["userId": "ann"]))
        #expect(try tags("again-1") == ["Cart": ["a"], "Count": 3])
        #expect(!herald.log().contains("ERROR"), "\(herald.log().suffix(1500))")
    }

    @Test func getTagsOfAnUnknownDeviceIsAnEmptyResult() throws {
        #expect(try herald.ok("getTags", iOS("never-seen")) == ["result": [:]])
    }

    @Test func badgeViaSetBadgeAndViaTheBadgeTag() throws {
        try herald.ok("registerDevice", iOS("badge-device", ["push_token": "aa11"]))
        try herald.ok("setBadge", iOS("badge-device", ["badge": 3]))
        #expect(try tags("badge-device")["badge"] == 3)
        try herald.ok("setTags", iOS("badge-device", ["tags": ["badge": 0]]))
        #expect(try tags("badge-device")["badge"] == 0)
    }

    @Test func unregisterKeepsTheDeviceAndItsTags() throws {
        try herald.ok("registerDevice", iOS("leaving", ["push_token": "bb22", "tags": ["Level": 9]]))
        try herald.ok("unregisterDevice", iOS("leaving"))
        #expect(try tags("leaving") == ["Level": 9])
    }

    @Test func usersAndMerges() throws {
        try herald.ok("registerDevice", android("u-device", ["push_token": "cc33", "tags": ["Level": 2]]))
        try herald.ok("registerUser", android("u-device", ["userId": "customer-42", "tz_offset": 3600]))
        // Reading a user's tags without a device is the Remote API's form: it takes the token.
        let auth = JSON.string(HeraldProcesses.apiToken)
        #expect(try herald.ok("getTags", ["application": .string(Self.app), "userId": "customer-42", "auth": auth]) == ["result": ["Level": 2]])
        try herald.ok("mergeUser", android("u-device", ["oldUserId": "customer-42", "newUserId": "customer-43", "merge": true, "ts": 1_700_000_000]))
        #expect(try herald.ok("getTags", ["application": .string(Self.app), "userId": "customer-43", "auth": auth]) == ["result": ["Level": 2]])
    }

    @Test func applicationOpenWorksWithoutAPushToken() throws {
        try herald.ok("applicationOpen", iOS("no-token-yet", ["timezone": "3600", "language": "de", "app_version": "1.0"]))
        try herald.ok("setTags", iOS("no-token-yet", ["tags": ["Level": 1]]))
        #expect(try tags("no-token-yet") == ["Level": 1])
    }

    @Test func reportsAreAcceptedAndStoredBeforeTheReply() throws {
        let hwid = "reporter"
        try herald.ok("registerDevice", iOS(hwid, ["push_token": "dd44"]))
        #expect(try herald.ok("postEvent", iOS(hwid, [
            "event": "PW_ScreenOpen", "attributes": ["screen_name": "Home", "device_type": "1", "application_version": "2.3"],
            "timestampUTC": 1_700_000_000, "timestampCurrent": 1_700_010_800,
        ])) == [:])
        try herald.ok("postEvent", android(hwid, ["event": "PW_UserIdle", "attributes": ["idle_seconds": 30, "session_duration": 120],
                                                  "timestampUTC": 1_700_000_100, "timestampCurrent": 1_700_000_100]))
        try herald.ok("pushStat", iOS(hwid, ["hash": "abc123", "metaData": "m"]))
        try herald.ok("messageDeliveryEvent", android(hwid, ["hash": "abc123"]))
        try herald.ok("setPurchase", iOS(hwid, ["productIdentifier": "gold", "quantity": 1, "price": "9.99", "currency": "EUR",
                                               "transactionDate": 1_700_000_000]))
        let store = try herald.stores().devices
        let reports = try store.reports(app: Self.app, limit: 100)
        #expect(reports.map(\.kind) == [.event, .event, .pushStat, .delivery, .purchase])
        #expect(reports[0].name == "PW_ScreenOpen" && reports[0].timestampUTC == 1_700_000_000)
        #expect(reports[0].body["attributes"]?["screen_name"] == "Home")
        #expect(reports[2].hash == "abc123" && reports[3].hash == "abc123")
    }

    /// A report keeps its call's `request` object as the client wrote it; when an object in it names
    /// a member twice, or its padding alone takes it past the report limit, it keeps the compact
    /// encoding of what was read instead.
    @Test func reportsKeepTheRequestAsSentUnlessItNamesAMemberTwice() throws {
        func post(_ request: String) throws -> JSON {
            let answer = try herald.client.request("POST", "/json/1.3/postEvent", body: Array(#"{ "request" : \#(request) }"#.utf8))
            #expect(answer.status == 200)
            return try JSON.parse(answer.body)
        }
        let app = Self.app
        let asSent = #"{"hwid": "raw-1", "application": "\#(app)", "event": "Shown", "attributes": {"b": 2, "a": "caf\u00e9 \/"}}"#
        #expect(try post(asSent)["status_code"] == .int(200))
        let twice = #"{"hwid":"raw-2","application":"\#(app)","event":"Shown","attributes":{"k":1,"k":2}}"#
        #expect(try post(twice)["status_code"] == .int(200))
        let padded = #"{"hwid":"raw-3","application":"\#(app)",\#(String(repeating: " ", count: 17_000))"event":"Shown"}"#
        #expect(try post(padded)["status_code"] == .int(200))
        let reports = try herald.stores().devices.reports(app: app, limit: 10)
        #expect(reports.map(\.hwid) == ["raw-1", "raw-2", "raw-3"])
        #expect(reports.map(\.bodyText) == [
            asSent,
            #"{"application":"\#(app)","attributes":{"k":2},"event":"Shown","hwid":"raw-2"}"#,
            #"{"application":"\#(app)","event":"Shown","hwid":"raw-3"}"#,
        ])
        #expect(reports[0].body["attributes"] == ["b": 2, "a": "café /"])
    }

    @Test func theRestOfTheSDKMethodsAnswerWithTheirShapes() throws {
        #expect(try herald.ok("getInApps", iOS("x", ["language": "en"])) == ["inApps": []])
        for method in ["triggerInAppAction", "richMediaAction", "setActivityToken", "setActivityPushToStartToken"] {
            #expect(try herald.ok(method, iOS("x", ["action": "show", "code": "c", "activity_token": "t", "activity_id": "match-7",
                                                    "activity_push_to_start_token": "s"])) == .null)
        }
        // Live Activity tokens are kept per device and activity (nil: push-to-start).
        let devices = try herald.stores().devices
        #expect(try devices.activityTokens(app: Self.app, hwid: "x").map { [$0.activityID ?? "", $0.token] } == [["", "s"], ["match-7", "t"]])
        // A token without an activity id (older SDKs, or "") is only reported; no token is the SDK's
        // stopLiveActivity, which ends the device's tokens of that activity.
        try herald.ok("setActivityToken", iOS("x", ["activity_token": "u", "activity_id": ""]))
        try herald.ok("setActivityToken", iOS("x", ["activity_id": "match-7"]))
        #expect(try devices.activityTokens(app: Self.app, hwid: "x").map { [$0.activityID ?? "", $0.token, "\($0.active)"] }
                == [["", "s", "true"], ["match-7", "t", "false"]])
        #expect(try herald.ok("registerEmail", ["application": .string(Self.app), "email": "a@example.com", "language": "en"]) == .null)
        #expect(try herald.ok("getConfig", iOS("x", ["features": ["channels", "events"]]))["features"] != nil)
        try herald.ok("createTestDevice", iOS("test-device", ["push_token": "ee55", "name": "QA phone", "description": "d"]))
        // The inbox of a device no inbox message reached (InboxTests covers the rest).
        let inbox = try herald.ok("getInboxMessages", iOS("test-device", ["count": 10, "last_code": "", "last_request_time": 0]))
        #expect(inbox == ["messages": [], "next": "", "deleted": [], "new_inbox": 0])
    }

    // MARK: - Bad input

    func expectArgumentError(_ method: String, _ request: JSON, mentioning field: String,
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (status, body) = try herald.call(method, request)
        #expect(status == 200, sourceLocation: sourceLocation)
        #expect(body["status_code"] == .int(210), sourceLocation: sourceLocation)
        let message = body["status_message"]?.stringValue ?? ""
        #expect(message.contains(field), "\(message) should name \(field)", sourceLocation: sourceLocation)
    }

    @Test func argumentErrorsAre210AndNameTheField() throws {
        try expectArgumentError("registerDevice", iOS("bad-1"), mentioning: "push_token")
        try expectArgumentError("registerDevice", ["application": .string(Self.app), "push_token": "x", "device_type": 1], mentioning: "hwid")
        try expectArgumentError("setActivityPushToStartToken", iOS("la", [:]), mentioning: "activity_push_to_start_token")
        #expect(try herald.stores().devices.device(app: Self.app, hwid: "la") == nil)
        try expectArgumentError("registerDevice", iOS("bad-1", ["push_token": "x", "device_type": 99]), mentioning: "device_type")
        try expectArgumentError("registerDevice", iOS("bad-1", ["push_token": "x", "gateway": "staging"]), mentioning: "gateway")
        try expectArgumentError("registerDevice", iOS("bad-1", ["push_token": "x", "timezone": "east"]), mentioning: "timezone")
        try expectArgumentError("registerDevice", iOS("bad-1", ["push_token": "x", "application": "NOPE-00000"]), mentioning: "application")
        try expectArgumentError("registerDevice", iOS("bad-1", ["push_token": ["x"]]), mentioning: "push_token")
        try expectArgumentError("setTags", iOS("bad-1"), mentioning: "tags")
        try expectArgumentError("setTags", iOS("bad-1", ["tags": ["Level": ["operation": "double", "value": 1]]]), mentioning: "Level")
        try expectArgumentError("setBadge", iOS("bad-1", ["badge": "many"]), mentioning: "badge")
        try expectArgumentError("postEvent", iOS("bad-1", ["attributes": [:]]), mentioning: "event")
        try expectArgumentError("postEvent", iOS("bad-1", ["event": "X", "attributes": "nope"]), mentioning: "attributes")
        // Reports are kept small: an event with 20 KB of attributes is refused (a body may be 1 MB).
        try expectArgumentError("postEvent", iOS("bad-1", ["event": "X", "attributes": ["blob": .string(String(repeating: "z", count: 20_000))]]),
                                mentioning: "16384")
        try expectArgumentError("mergeUser", iOS("bad-1", ["newUserId": "b"]), mentioning: "oldUserId")
        try expectArgumentError("getTags", ["application": .string(Self.app)], mentioning: "hwid")
        let (_, noRequest) = try herald.call("getTags", .null)
        #expect(noRequest["status_code"] == .int(210))
    }

    @Test func aRejectedRequestChangesNothing() throws {
        try herald.ok("registerDevice", android("atomic", ["push_token": "ff66", "tags": ["Level": 1, "City": "Oslo"]]))
        try expectArgumentError("setTags", android("atomic", ["tags": ["City": "Bergen", "Level": "not a number"]]), mentioning: "Level")
        #expect(try tags("atomic") == ["Level": 1, "City": "Oslo"])
        try expectArgumentError("registerDevice", android("atomic-new", ["push_token": "gg77", "tags": ["Level": "high"]]), mentioning: "Level")
        #expect(try tags("atomic-new") == [:])
    }

    @Test func malformedJSONIs400AndUnknownMethodIs404() throws {
        let malformed = try herald.client.request("POST", "/json/1.3/setTags", body: Array(#"{"request": {"hwid": "#.utf8))
        #expect(malformed.status == 400)
        let notAnObject = try herald.client.request("POST", "/json/1.3/setTags", body: Array("[1,2]".utf8))
        #expect(notAnObject.status == 400)
        let unknown = try herald.client.request("POST", "/json/1.3/launchRocket", body: Array(#"{"request":{}}"#.utf8))
        #expect(unknown.status == 404)
        #expect(try JSON.parse(unknown.body)["status_code"] == .int(404))
        let get = try herald.client.request("GET", "/json/1.3/getTags")
        #expect(get.status == 405)
    }

    @Test func oversizedBodiesAre413AndChangeNothing() throws {
        let hwid = "big"
        let huge = String(repeating: "x", count: 70_000)
        let body = JSON.object(["request": iOS(hwid, ["push_token": "hh88", "tags": ["Blob": .string(huge)]])]).encoded()
        let response = try herald.client.request("POST", "/json/1.3/registerDevice", body: body)
        #expect(response.status == 413)
        #expect(try tags(hwid) == [:])
    }

    @Test func healthAndMetrics() throws {
        try herald.ok("registerDevice", iOS("metered", ["push_token": "ii99"]))
        _ = try herald.call("registerDevice", iOS("metered"))
        let health = try herald.client.request("GET", "/healthz")
        #expect(health.status == 200)
        let metrics = try herald.client.request("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains(#"herald_http_requests_total{route="registerDevice",status="200",code="200"} 1"#))
        #expect(metrics.text.contains(#"herald_http_requests_total{route="registerDevice",status="200",code="210"} 1"#))
    }

    @Test func logsNeverCarryPushTokens() throws {
        let token = "7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a"
        try herald.ok("registerDevice", iOS("secretive", ["push_token": .string(token)]))
        herald.stopIngest()
        #expect(!herald.log().contains(token))
    }
}
