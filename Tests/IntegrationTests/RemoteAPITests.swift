import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The Remote API as campaign tools call it, against the real `herald-ingest` and `herald-worker`:
/// every method with the request shapes exactly as the reference (`pushwoosh-remote-api.md`)
/// writes them, the refusals of malformed input and foreign tokens, and targeted messages
/// delivered through the APNs and FCM mocks.
@Suite(.serialized) struct RemoteAPITests {
    static let app = HeraldProcesses.appCode
    static let token = HeraldProcesses.apiToken

    /// hwid, platform, tags: a small audience whose sets the filters below pick from.
    static let audience: [(String, Int, [String: JSON])] = [
        ("r-1", 1, ["City": "Paris", "Level": 5]),
        ("r-2", 3, ["City": "Paris", "Level": 12]),
        ("r-3", 1, ["City": "Lyon", "Level": 15, "VIP": true]),
        ("r-4", 3, ["City": "Lyon", "VIP": false]),
        ("r-5", 1, ["Level": 10, "VIP": true]),
        ("r-6", 3, [:]),
    ]

    func envelope(_ herald: HeraldProcesses, _ method: String, _ request: JSON) throws -> JSON {
        let (status, body) = try herald.call(method, request)
        guard status == 200, body["status_code"] == 200 else {
            throw HTTPClient.Failure(description: "\(method): HTTP \(status) \(body.text)")
        }
        return body["response"] ?? .null
    }

    @Test func everyMethodInTheReferenceShapes() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        for (hwid, platform, tags) in Self.audience { try herald.register(SDKDevice(hwid, platform: platform, tags: tags)) }
        try herald.startWorker()
        let auth = JSON.string(Self.token)

        // createMessage: application, auth, notifications; unknown devices are listed per message.
        let created = try envelope(herald, "createMessage", [
            "application": .string(Self.app), "auth": auth,
            "notifications": [["send_date": "now", "content": "Hello", "devices": ["r-1", "token-r-2", "not-a-device"]]],
        ])
        let code = try #require(created["Messages"]?.arrayValue?.first?.stringValue)
        #expect(created == ["Messages": [.string(code)], "UnknownDevices": [code: ["not-a-device"]]])
        try herald.waitForMessage(code)
        #expect(Set(try herald.sinkHWIDs(code)) == ["r-1", "r-2"])

        // createTargetedMessage: the reference's example filter, the options at the top level.
        let targeted = try envelope(herald, "createTargetedMessage", [
            "auth": auth, "send_date": "now", "ignore_user_timezone": true, "timezone": "UTC", "content": "Targeted",
            "devices_filter": .string(#"A("\#(Self.app)", ["iOS"]) * (T("City", EQ, "Paris") + T("Level", GTE, 10)) \ T("VIP", EQ, true)"#),
        ])
        let targetedCode = try #require(targeted["messageCode"]?.stringValue)
        #expect(targeted == ["messageCode": .string(targetedCode)])
        try herald.waitForMessage(targetedCode)
        #expect(try herald.sinkHWIDs(targetedCode) == ["r-1"])

        // getMessageDetails and deleteMessage: auth and message only.
        let details = try envelope(herald, "getMessageDetails", ["auth": auth, "message": .string(targetedCode)])
        #expect(details["message"]?["code"] == .string(targetedCode) && details["message"]?["sent"] == 1, "\(details.text)")
        let later = try herald.send(["send_date": "2099-01-01 10:00", "content": "Later"])
        #expect(try envelope(herald, "deleteMessage", ["auth": auth, "message": .string(later)]) == .null)
        #expect(try herald.funnel(later).body["status"] == "deleted")

        // getMsgStats → request_id → getResults: sends from the delivery rows, first delivery and
        // open reports per device, the funnel as conversion.
        let hash = try #require(try envelope(herald, "getMessageDetails", ["auth": auth, "message": .string(code)])["message"]?["hash"]?.stringValue)
        try herald.ok("messageDeliveryEvent", ["application": .string(Self.app), "hwid": "r-1", "hash": .string(hash)])
        try herald.ok("messageDeliveryEvent", ["application": .string(Self.app), "hwid": "r-2", "hash": .string(hash)])
        for _ in 0..<2 { try herald.ok("pushStat", ["application": .string(Self.app), "hwid": "r-2", "hash": .string(hash)]) }
        let requestID = try #require(try envelope(herald, "getMsgStats", ["auth": auth, "message": .string(code)])["request_id"]?.stringValue)
        let results = try envelope(herald, "getResults", ["auth": auth, "request_id": .string(requestID)])
        #expect(results["formatter"] == .string("minutely"), "\(results.text)")
        let rows = results["rows"]?.arrayValue ?? []
        func total(_ action: String, in rows: [JSON]) -> Int64 {
            rows.filter { $0["action"] == .string(action) }.reduce(0) { $0 + ($1["count"]?.lenientInt ?? 0) }
        }
        #expect(total("send", in: rows) == 2 && total("delivery", in: rows) == 2 && total("open", in: rows) == 1, "\(results.text)")
        #expect(rows.allSatisfy { row in
            row["datetime"]?.stringValue.map { TagDate.parse($0) != nil && $0.count == 19 } ?? false
        }, "\(results.text)")
        #expect(results["conversion"] == ["send": 2, "delivery": 2, "open": 1, "events": []], "\(results.text)")

        // getAppStats → request_id → getResults: the six installs and registrations of the last hour.
        let now = Int64(Date().timeIntervalSince1970)
        let appRequest = try #require(try envelope(herald, "getAppStats", [
            "auth": auth, "application": .string(Self.app), "datefrom": .string(TagDate.format(now - 3_600) + ":00"),
            "dateto": .string(TagDate.format(now + 3_600) + ":00"),
        ])["request_id"]?.stringValue)
        let appResults = try envelope(herald, "getResults", ["auth": auth, "request_id": .string(appRequest)])
        #expect(appResults["formatter"] == .string("minutely"), "\(appResults.text)")
        let appRows = appResults["rows"]?.arrayValue ?? []
        #expect(total("install", in: appRows) == 6 && total("register", in: appRows) == 6 && total("unregister", in: appRows) == 0,
                "\(appResults.text)")

        // Request ids carry their parameters: they answer the same after ingest restarts.
        #expect(herald.stopIngest() == 0)
        try herald.startIngest()
        let again = try envelope(herald, "getResults", ["auth": auth, "request_id": .string(requestID)])
        #expect(again["conversion"] == results["conversion"] && total("send", in: again["rows"]?.arrayValue ?? []) == 2)
    }

    /// A call without an application's token is refused before any field is read: it learns
    /// nothing of the request's shape (a field too long, missing or unknown all look the same).
    /// Another application's token is authenticated, and gets the field checks.
    @Test func aCallWithoutATokenIsRefusedBeforeItsFieldsAreChecked() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let code = try herald.send(["send_date": "2099-01-01 10:00", "content": "Later"])
        let long = JSON.string(String(repeating: "8E26-BC37E018-FFDE6554", count: 5))
        let calls: [(String, JSON)] = [
            ("deleteMessage", ["message": long]),
            ("deleteMessage", [:]),
            ("deleteMessage", ["message": .string(code)]),
            ("getMessageDetails", ["message": long]),
            ("getMsgStats", ["message": 5]),
            ("createMessage", ["application": long, "notifications": [["content": "x"]]]),
            ("createMessage", ["application": "NOPE-00000", "notifications": "x"]),
            ("createTargetedMessage", ["content": "x", "devices_filter": "T(("]),
            ("getAppStats", ["application": .string(Self.app), "datefrom": "yesterday"]),
            ("getResults", ["request_id": "not-a-request"]),
            ("addTag", ["tag": "Tier"]),
            ("startLiveActivity", ["application": .string(Self.app)]),
        ]
        for (method, request) in calls {
            for auth in [nil, "wrong"] as [JSON?] {
                var fields = request.objectValue ?? [:]
                if let auth { fields["auth"] = auth }
                let (status, body) = try herald.call(method, .object(fields))
                #expect(status == 403 && body["status_code"] == 403
                        && body["status_message"] == "access denied: auth does not match the application's api_token",
                        "\(method) \(JSON.object(fields).text): \(body.text)")
            }
        }
        #expect(try herald.funnel(code).body["status"] == "scheduled")
        // Authenticated, if as another application: the field checks answer.
        let (_, foreign) = try herald.call("deleteMessage", ["auth": "news-secret", "message": long])
        #expect(foreign["status_code"] == 210 && foreign["status_message"] == "message is longer than 64 bytes", "\(foreign.text)")
    }

    @Test func malformedInputIsA210NamingTheFieldAForeignTokenA403AndNothingChanges() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        for (hwid, platform, tags) in Self.audience { try herald.register(SDKDevice(hwid, platform: platform, tags: tags)) }
        let code = try herald.send(["send_date": "2099-01-01 10:00", "content": "Later"])
        let auth = JSON.string(Self.token), app = JSON.string(Self.app)
        let otherApp = JSON.string(HeraldProcesses.otherAppCode)
        let news = JSON.string("news-secret")
        let shop = JSON.string(#"A("\#(Self.app)")"#)
        let messageStats = try envelope(herald, "getMsgStats", ["auth": auth, "message": .string(code)])["request_id"] ?? .null
        let cases: [(String, JSON, Int64, String)] = [
            ("createTargetedMessage", ["auth": auth, "content": "x"], 210, "devices_filter is required"),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": 5], 210, "devices_filter must be a string"),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": .string(#"A("\#(Self.app)") T("City", EQ, "x")"#)], 210,
             #"devices_filter at character 18 near "T("City", EQ, "x")": expected +, * or \ between two sets"#),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": #"T("City", EQ, 3"#], 210,
             #"devices_filter at character 16: expected "," or ")", but the filter ends"#),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": #"T("Nope", EQ, 3)"#], 210,
             #"devices_filter at character 1: tag "Nope" is not defined in this application"#),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": #"A("NOPE-00000")"#], 210,
             "devices_filter: application NOPE-00000 not found"),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": #"G("GROUP-1")"#], 210, "application group"),
            ("createTargetedMessage", ["auth": auth, "devices_filter": shop], 210, "content: is required"),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": shop, "send_date": "soon"], 210,
             "send_date: must be \"now\" or \"YYYY-MM-DD HH:mm\""),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": shop, "conditions": [["City", "EQ", "x"]]],
             210, "conditions is not a field of createTargetedMessage"),
            ("createTargetedMessage", ["auth": news, "content": "x", "devices_filter": shop], 403, "access denied"),
            ("createTargetedMessage", ["auth": auth, "content": "x", "devices_filter": .string(#"A("\#(Self.app)") + A("\#(HeraldProcesses.otherAppCode)")"#)],
             403, "access denied"),
            ("createTargetedMessage", ["auth": "wrong", "content": "x", "devices_filter": #"T("City", EQ, "x")"#], 403, "access denied"),
            ("createMessage", ["auth": auth, "application": app, "notifications": [["content": "x", "devices": "r-1"]]], 210,
             "notifications[0].devices: must be an array of strings"),
            ("getMsgStats", ["auth": auth], 210, "message is required"),
            ("getMsgStats", ["auth": news, "message": .string(code)], 210, "message \(code) not found"),
            ("getMsgStats", ["auth": auth, "message": "0000-00000000-00000000"], 210, "message 0000-00000000-00000000 not found"),
            ("getAppStats", ["auth": auth, "application": app, "datefrom": "yesterday", "dateto": "2026-01-02 00:00:00"], 210,
             "datefrom must be \"YYYY-MM-DD HH:mm:ss\""),
            ("getAppStats", ["auth": auth, "application": app, "datefrom": "2026-01-02 00:00:00"], 210, "dateto is required"),
            ("getAppStats", ["auth": auth, "application": app, "datefrom": "2026-01-02 00:00:00", "dateto": "2026-01-01 00:00:00"], 210,
             "dateto must be later than datefrom"),
            ("getAppStats", ["auth": news, "application": app, "datefrom": "2026-01-01", "dateto": "2026-01-02"], 403, "access denied"),
            ("getAppStats", ["auth": news, "application": otherApp, "datefrom": "2026-01-01 00:00", "dateto": "2026-01-01 00:00"], 210,
             "dateto must be later than datefrom"),
            ("getResults", ["auth": auth], 210, "request_id is required"),
            ("getResults", ["auth": auth, "request_id": "not-a-request"], 210, "request_id not-a-request not found"),
            ("getResults", ["auth": news, "request_id": messageStats], 210, "not found"),
        ]
        let before = try herald.messageCount()
        for (method, request, expected, text) in cases {
            let (status, body) = try herald.call(method, request)
            #expect(status == (expected == 403 ? 403 : 200) && body["status_code"] == .int(expected), "\(method) \(request.text): \(body.text)")
            let message = body["status_message"]?.stringValue ?? ""
            #expect(message.contains(text), "\(method) \(request.text): \(message)")
        }
        #expect(try herald.messageCount() == before)
        #expect(try herald.funnel(code).body["status"] == "scheduled")
    }

    @Test(arguments: TestDatabase.tested) func targetedMessagesReachTheDevicesOfTheirSetsThroughAPNsAndFCM(_ database: TestDatabase) throws {
        let rig = try DeliveryRig(database: database)
        var tokens: [String: String] = [:]
        for (hwid, platform, tags) in Self.audience {
            let token = deviceToken("", seed: hwid)
            tokens[hwid] = token
            try rig.register(hwid, platform: platform, token: token)
            if !tags.isEmpty { try rig.herald.ok("setTags", SDKRequests.setTags(app: Self.app, hwid: hwid, tags)) }
        }
        let cases: [(String, Set<String>)] = [
            (#"T("City", EQ, "Paris") + T("Level", GTE, 10)"#, ["r-1", "r-2", "r-3", "r-5"]),
            (#"(T("City", ANY) * T("Level", ANY))"#, ["r-1", "r-2", "r-3"]),
            (#"(A("\#(Self.app)") \ T("City", ANY))"#, ["r-5", "r-6"]),
            (#"((A("\#(Self.app)", ["ANDROID"]) \ T("VIP", EQ, "false")) + (AT("\#(Self.app)", "VIP", EQ, 1) * T("City", NOTSET)))"#,
             ["r-2", "r-6", "r-5"]),
        ]
        for (filter, expected) in cases {
            let reply = try envelope(rig.herald, "createTargetedMessage", [
                "auth": .string(Self.token), "devices_filter": .string(filter), "content": "Hi", "send_date": "now",
            ])
            let code = try #require(reply["messageCode"]?.stringValue)
            let funnel = try rig.herald.waitForMessage(code)
            #expect(funnel["targeted"] == .int(Int64(expected.count)) && funnel["sent"] == .int(Int64(expected.count)), "\(filter): \(funnel.text)")
            let reached = Set(try rig.deliveries(code).map(\.hwid))
            #expect(reached == expected, "\(filter)")
        }
        // What the providers received: each device's token once per message that reached it.
        let records = try rig.apns.records() + rig.fcm.records()
        for (hwid, _, _) in Self.audience {
            let expected = cases.filter { $0.1.contains(hwid) }.count
            #expect(records.filter { $0["token"] == .string(tokens[hwid] ?? "") }.count == expected, "\(hwid)")
        }
    }
}
