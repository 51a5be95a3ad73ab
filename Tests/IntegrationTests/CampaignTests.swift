import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Campaigns end to end: the Remote API on the real `herald-ingest`, real `herald-worker`
/// processes, and the Shop app's file sink as the observable output. Every wait is a bounded poll.
@Suite(.serialized) struct CampaignTests {
    static let app = HeraldProcesses.appCode

    // MARK: - 1. Targeting by tag conditions

    /// One device of the seeded population, as the test knows it (independently of the product).
    struct Member: Sendable {
        let hwid: String
        let platform: Int
        let language: String?
        var hasToken = true
        var subscribed = true
        let level: Int64?
        let city: String?
        let interests: [String]?
        let signup: Int64?
        let vip: Bool?
        let score: Double?

        /// Herald delivers to subscribed iOS and Android devices that have a push token.
        var deliverable: Bool { hasToken && subscribed && (platform == 1 || platform == 3) }

        var tags: [String: JSON] {
            var tags: [String: JSON] = [:]
            if let level { tags["Level"] = .int(level) }
            if let city { tags["City"] = .string(city) }
            if let interests { tags["Interests"] = .array(interests.map(JSON.string)) }
            if let signup { tags["Signup"] = .string(utcText(signup)) }
            if let vip { tags["VIP"] = .bool(vip) }
            if let score { tags["Score"] = .double(score) }
            return tags
        }
    }

    static let signupBase: Int64 = 1_704_067_200  // 2024-01-01 00:00 UTC

    static func population(count: Int, seed: UInt64) -> [Member] {
        var random = SplitMix64(seed: seed)
        func maybe<T>(_ make: () -> T) -> T? { Int.random(in: 0..<5, using: &random) == 0 ? nil : make() }
        let cities = ["Oslo", "Bergen", "Paris", "Lyon", "Tokyo"]
        let topics = ["shoes", "bags", "hats", "books", "games"]
        let languages: [String?] = ["en", "de", "fr", nil]
        return (0..<count).map { index in
            // A few devices on platforms Herald does not deliver to (Amazon, Safari).
            let platform = index % 50 == 49 ? (index % 100 == 99 ? 9 : 10) : (Bool.random(using: &random) ? 1 : 3)
            let language = languages[Int.random(in: 0..<languages.count, using: &random)]
            let level = maybe { Int64.random(in: 0..<20, using: &random) }
            let city = maybe { cities[Int.random(in: 0..<cities.count, using: &random)] }
            let interests = maybe { () -> [String] in
                let wanted = Int.random(in: 0...3, using: &random)  // sometimes an empty list
                return Array(topics.shuffled(using: &random).prefix(wanted))
            }
            let signup = maybe { signupBase + Int64.random(in: 0..<(60 * 24 * 60), using: &random) * 60 }
            let vip = maybe { Bool.random(using: &random) }
            // k/8 with k odd: never integral (so the tag is a decimal) and exact in binary.
            let score = maybe { Double(Int.random(in: 0..<80, using: &random) * 2 + 1) / 8 }
            return Member(hwid: String(format: "pop-%03d", index), platform: platform, language: language, level: level, city: city,
                          interests: interests, signup: signup, vip: vip, score: score)
        }
    }

    struct TargetingCase: Sendable {
        let name: String
        let conditions: JSON
        var conditionsOperator: String? = nil
        let matches: @Sendable (Member) -> Bool
    }

    static func day(_ text: String) -> Int64 { TagDate.parse(text)! / 86_400 }

    static let targetingCases: [TargetingCase] = [
        // Integer
        TargetingCase(name: "Level EQ 7", conditions: [["Level", "EQ", 7]]) { $0.level == 7 },
        TargetingCase(name: "Level NOTEQ 7", conditions: [["Level", "NOTEQ", 7]]) { $0.level != nil && $0.level != 7 },
        TargetingCase(name: "Level IN", conditions: [["Level", "IN", [1, 3, 5, 19]]]) { [1, 3, 5, 19].contains($0.level ?? -1) },
        TargetingCase(name: "Level NOTIN", conditions: [["Level", "NOTIN", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]]) {
            $0.level.map { $0 >= 10 } ?? false
        },
        TargetingCase(name: "Level GTE 15", conditions: [["Level", "GTE", 15]]) { ($0.level ?? -1) >= 15 },
        TargetingCase(name: "Level LTE 2", conditions: [["Level", "LTE", 2]]) { $0.level.map { $0 <= 2 } ?? false },
        TargetingCase(name: "Level BETWEEN 5 8", conditions: [["Level", "BETWEEN", [5, 8]]]) { $0.level.map { (5...8).contains($0) } ?? false },
        TargetingCase(name: "Level NOTSET", conditions: [["Level", "NOTSET"]]) { $0.level == nil },
        TargetingCase(name: "Level ANY", conditions: [["Level", "ANY", ""]]) { $0.level != nil },
        TargetingCase(name: "Level EQ \"7\" (numeric string)", conditions: [["Level", "EQ", "7"]]) { $0.level == 7 },
        TargetingCase(name: "Level GTE 14.5", conditions: [["Level", "GTE", 14.5]]) { ($0.level ?? -1) >= 15 },
        // String
        TargetingCase(name: "City EQ Oslo", conditions: [["City", "EQ", "Oslo"]]) { $0.city == "Oslo" },
        TargetingCase(name: "City NOTEQ Oslo", conditions: [["City", "NOTEQ", "Oslo"]]) { $0.city != nil && $0.city != "Oslo" },
        TargetingCase(name: "City IN", conditions: [["City", "IN", ["Paris", "Lyon"]]]) { ["Paris", "Lyon"].contains($0.city ?? "") },
        TargetingCase(name: "City NOTIN", conditions: [["City", "NOTIN", ["Paris", "Lyon", "Tokyo"]]]) {
            $0.city.map { !["Paris", "Lyon", "Tokyo"].contains($0) } ?? false
        },
        TargetingCase(name: "City NOTSET", conditions: [["City", "NOTSET", nil]]) { $0.city == nil },
        TargetingCase(name: "City ANY", conditions: [["City", "ANY"]]) { $0.city != nil },
        // List
        TargetingCase(name: "Interests IN", conditions: [["Interests", "IN", ["books", "games"]]]) {
            !Set($0.interests ?? []).isDisjoint(with: ["books", "games"])
        },
        TargetingCase(name: "Interests NOTIN", conditions: [["Interests", "NOTIN", ["shoes"]]]) {
            $0.interests.map { !$0.contains("shoes") } ?? false
        },
        TargetingCase(name: "Interests EQ hats", conditions: [["Interests", "EQ", "hats"]]) { $0.interests?.contains("hats") ?? false },
        TargetingCase(name: "Interests NOTSET", conditions: [["Interests", "NOTSET"]]) { $0.interests == nil },
        TargetingCase(name: "Interests ANY", conditions: [["Interests", "ANY"]]) { $0.interests != nil },
        // Date
        TargetingCase(name: "Signup GTE", conditions: [["Signup", "GTE", "2024-02-01 00:00"]]) {
            ($0.signup ?? 0) >= TagDate.parse("2024-02-01 00:00")!
        },
        TargetingCase(name: "Signup LTE", conditions: [["Signup", "LTE", "2024-01-10 12:30"]]) {
            $0.signup.map { $0 <= TagDate.parse("2024-01-10 12:30")! } ?? false
        },
        TargetingCase(name: "Signup BETWEEN", conditions: [["Signup", "BETWEEN", ["2024-01-15 00:00", "2024-01-31 23:59"]]]) {
            $0.signup.map { (TagDate.parse("2024-01-15 00:00")!...TagDate.parse("2024-01-31 23:59")!).contains($0) } ?? false
        },
        TargetingCase(name: "Signup EQ day", conditions: [["Signup", "EQ", "2024-01-20"]]) {
            $0.signup.map { $0 / 86_400 == day("2024-01-20") } ?? false
        },
        TargetingCase(name: "Signup NOTSET", conditions: [["Signup", "NOTSET"]]) { $0.signup == nil },
        TargetingCase(name: "Signup NOTEQ day", conditions: [["Signup", "NOTEQ", "2024-01-20 15:45"]]) {
            $0.signup.map { $0 / 86_400 != day("2024-01-20") } ?? false
        },
        TargetingCase(name: "Signup IN days", conditions: [["Signup", "IN", ["2024-01-20", "2024-02-10 08:00"]]]) {
            $0.signup.map { [day("2024-01-20"), day("2024-02-10")].contains($0 / 86_400) } ?? false
        },
        TargetingCase(name: "Signup NOTIN days", conditions: [["Signup", "NOTIN", ["2024-01-20", "2024-02-10"]]]) {
            $0.signup.map { ![day("2024-01-20"), day("2024-02-10")].contains($0 / 86_400) } ?? false
        },
        TargetingCase(name: "Signup GTE unix seconds", conditions: [["Signup", "GTE", 1_706_745_600]]) {
            ($0.signup ?? 0) >= 1_706_745_600
        },
        TargetingCase(name: "Signup LTE 30 days ago", conditions: [["Signup", "LTE", "30 days ago"]]) { $0.signup != nil },
        // Boolean
        TargetingCase(name: "VIP EQ true", conditions: [["VIP", "EQ", true]]) { $0.vip == true },
        TargetingCase(name: "VIP EQ 0", conditions: [["VIP", "EQ", 0]]) { $0.vip == false },
        TargetingCase(name: "VIP EQ \"false\"", conditions: [["VIP", "EQ", "false"]]) { $0.vip == false },
        TargetingCase(name: "VIP NOTSET", conditions: [["VIP", "NOTSET"]]) { $0.vip == nil },
        TargetingCase(name: "VIP ANY", conditions: [["VIP", "ANY"]]) { $0.vip != nil },
        // Decimal
        TargetingCase(name: "Score GTE", conditions: [["Score", "GTE", 15.125]]) { ($0.score ?? -1) >= 15.125 },
        TargetingCase(name: "Score LTE", conditions: [["Score", "LTE", 3.125]]) { $0.score.map { $0 <= 3.125 } ?? false },
        TargetingCase(name: "Score BETWEEN", conditions: [["Score", "BETWEEN", [2.125, 5.125]]]) {
            $0.score.map { (2.125...5.125).contains($0) } ?? false
        },
        TargetingCase(name: "Score NOTSET", conditions: [["Score", "NOTSET"]]) { $0.score == nil },
        TargetingCase(name: "Score IN", conditions: [["Score", "IN", [0.125, 2.625, 9.875]]]) { [0.125, 2.625, 9.875].contains($0.score ?? -1) },
        TargetingCase(name: "Score NOTEQ", conditions: [["Score", "NOTEQ", 2.625]]) { $0.score != nil && $0.score != 2.625 },
        TargetingCase(name: "Score ANY", conditions: [["Score", "ANY"]]) { $0.score != nil },
        // Built-in Language
        TargetingCase(name: "Language EQ de", conditions: [["Language", "EQ", "de"]]) { $0.language == "de" },
        TargetingCase(name: "Language NOTEQ de", conditions: [["Language", "NOTEQ", "de"]]) { $0.language != nil && $0.language != "de" },
        TargetingCase(name: "Language IN", conditions: [["Language", "IN", ["de", "fr"]]]) { ["de", "fr"].contains($0.language ?? "") },
        TargetingCase(name: "Language NOTSET", conditions: [["Language", "NOTSET"]]) { $0.language == nil },
        // Combinations
        TargetingCase(name: "AND", conditions: [["Level", "GTE", 10], ["City", "EQ", "Oslo"]]) {
            ($0.level ?? -1) >= 10 && $0.city == "Oslo"
        },
        TargetingCase(name: "OR", conditions: [["VIP", "EQ", true], ["Score", "GTE", 15.125]], conditionsOperator: "OR") {
            $0.vip == true || ($0.score ?? -1) >= 15.125
        },
        TargetingCase(name: "OR of NOTSETs", conditions: [["City", "NOTSET"], ["Level", "NOTSET"]], conditionsOperator: "or") {
            $0.city == nil || $0.level == nil
        },
        TargetingCase(name: "OR of three types", conditions: [["City", "EQ", "Tokyo"], ["Level", "LTE", 1], ["Signup", "GTE", "2024-02-25 00:00"]],
                      conditionsOperator: "OR") {
            $0.city == "Tokyo" || ($0.level.map { $0 <= 1 } ?? false) || ($0.signup ?? 0) >= TagDate.parse("2024-02-25 00:00")!
        },
        TargetingCase(name: "explicit AND", conditions: [["Interests", "IN", ["bags"]], ["VIP", "EQ", false]],
                      conditionsOperator: "AND") {
            ($0.interests?.contains("bags") ?? false) && $0.vip == false
        },
    ]

    @Test(arguments: TestDatabase.tested) func everyOperatorTargetsTheAudienceComputedIndependently(_ database: TestDatabase) throws {
        let herald = try HeraldProcesses(throttle: (count: 1000, windowSeconds: 3600), database: database)
        try herald.startIngest()
        var members = Self.population(count: 300, seed: 0x5EED_CAFE)
        for member in members {
            try herald.register(SDKDevice(member.hwid, platform: member.platform, language: member.language, tags: member.tags))
        }
        for index in members.indices where index % 37 == 5 {
            try herald.unregister(members[index].hwid)
            members[index].hasToken = false
        }
        for index in members.indices where index % 41 == 7 && (members[index].platform == 1 || members[index].platform == 3) {
            try herald.unsubscribeViaOneSignal(members[index].hwid, platform: members[index].platform)
            members[index].subscribed = false
        }
        try herald.startWorker()
        try herald.startWorker()

        let notifications: [JSON] = Self.targetingCases.map { testCase in
            var fields: [String: JSON] = ["content": .string("case \(testCase.name)"), "conditions": testCase.conditions]
            if let op = testCase.conditionsOperator { fields["conditions_operator"] = .string(op) }
            return .object(fields)
        }
        let codes = try herald.send(notifications)
        #expect(Set(codes).count == codes.count)

        for (testCase, code) in zip(Self.targetingCases, codes) {
            let funnel = try herald.waitForMessage(code)
            let expected = Set(members.filter { $0.deliverable && testCase.matches($0) }.map(\.hwid))
            let received = try herald.sinkHWIDs(code)
            #expect(Set(received) == expected, "\(testCase.name): audience differs")
            #expect(received.count == Set(received).count, "\(testCase.name): a device received the message twice")
            #expect(funnel["targeted"] == .int(Int64(expected.count)), "\(testCase.name): funnel \(funnel.text)")
            #expect(funnel["targeted"] == funnel["sent"], "\(testCase.name): funnel \(funnel.text)")
            #expect(funnel["failed"] == 0 && funnel["throttled"] == 0, "\(testCase.name): funnel \(funnel.text)")
        }
        // The population is rich enough that no case is trivially empty or everything.
        let deliverable = members.filter(\.deliverable).count
        for testCase in Self.targetingCases {
            let size = members.filter { $0.deliverable && testCase.matches($0) }.count
            #expect(size > 0 && size < deliverable, "\(testCase.name) selects \(size) of \(deliverable)")
        }
    }

    /// Pushwoosh documents the built-in `Language` tag as the lower-case two-letter ISO-639-1 code,
    /// while the iOS SDK registers languages such as `zh-Hans` or `pt-BR`:
    /// conditions compare the base code.
    @Test func theLanguageConditionMatchesTheBaseLanguageOfRegionalCodes() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.register(SDKDevice("ios-zh", platform: 1, language: "zh-Hans"))
        try herald.register(SDKDevice("ios-pt", platform: 1, language: "pt-BR"))
        try herald.register(SDKDevice("and-de", platform: 3, language: "de"))
        try herald.register(SDKDevice("and-en", platform: 3, language: "en"))
        try herald.startWorker()
        let codes = try herald.send([
            ["content": "zh", "conditions": [["Language", "EQ", "zh"]]],
            ["content": "pt de", "conditions": [["Language", "IN", ["pt", "de"]]]],
            ["content": "not en", "conditions": [["Language", "NOTEQ", "en"]]],
        ])
        for code in codes { try herald.waitForMessage(code) }
        #expect(try herald.sinkHWIDs(codes[2]).sorted() == ["and-de", "ios-pt", "ios-zh"])
        #expect(try herald.sinkHWIDs(codes[0]) == ["ios-zh"])
        #expect(try herald.sinkHWIDs(codes[1]).sorted() == ["and-de", "ios-pt"])
    }

    // MARK: - 2. users, devices, platforms; subscription

    @Test func usersDevicesAndPlatformsFiltersAndSubscription() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let devices = [
            SDKDevice("u-a", platform: 1, token: "aaaa01", userID: "u1", tags: ["Level": 1]),
            SDKDevice("u-b", platform: 3, token: "fcm-b", userID: "u1", tags: ["Level": 2]),
            SDKDevice("u-c", platform: 1, token: "aaaa03", userID: "u2"),
            SDKDevice("u-d", platform: 3, token: "fcm-d"),
            SDKDevice("u-e", platform: 1, token: "aaaa05", userID: "u1"),
            SDKDevice("u-f", platform: 3, token: "fcm-f", userID: "u2"),
            SDKDevice("u-g", platform: 9, token: "adm-g", userID: "u1"),
        ]
        for device in devices { try herald.register(device) }
        try herald.unsubscribeViaOneSignal("u-e", platform: 1)
        try herald.unregister("u-f")
        // Devices that came in through the OneSignal helper: one subscribed, one unsubscribed from the start.
        let added = try herald.oneSignal("/onesignal/adddevice", [("app_id", Self.app), ("device_type", "0"), ("identifier", "0b0b0b0b"),
                                                                  ("notification_types", "1")])
        let player = try #require(added.body["player_id"]?.stringValue)
        let optedOut = try herald.oneSignal("/onesignal/adddevice", [("app_id", Self.app), ("device_type", "1"),
                                                                     ("identifier", "fcm-opted-out"), ("notification_types", "-2")])
        let optedOutPlayer = try #require(optedOut.body["player_id"]?.stringValue)
        try herald.startWorker()

        let cases: [(String, JSON, Set<String>)] = [
            ("no targeting", ["content": "all"], ["u-a", "u-b", "u-c", "u-d", player]),
            ("users u1", ["content": "u1", "users": ["u1"]], ["u-a", "u-b"]),
            ("users win over devices", ["content": "users", "users": ["u1", "u2"], "devices": ["u-d"]], ["u-a", "u-b", "u-c"]),
            ("devices by hwid and token",
             ["content": "devices", "devices": ["u-a", "fcm-b", "u-e", "u-f", "fcm-f", .string(optedOutPlayer), "ghost"]],
             ["u-a", "u-b"]),
            ("platforms Android", ["content": "android", "platforms": [3]], ["u-b", "u-d"]),
            ("platforms iOS and users", ["content": "ios", "platforms": [1], "users": ["u1"]], ["u-a"]),
            ("conditions ignored with devices", ["content": "c", "devices": ["u-c"], "conditions": [["Level", "EQ", 999]]], ["u-c"]),
            ("conditions", ["content": "level", "conditions": [["Level", "LTE", 2]]], ["u-a", "u-b"]),
            // Codes of platforms Herald does not deliver to are accepted and match no device.
            ("platforms Amazon only", ["content": "amazon", "platforms": [9]], []),
            // Content is required only where something is shown.
            ("silent iOS, no content", ["ios_silent": 1, "platforms": [1]], ["u-a", "u-c", player]),
            ("silent Android, empty content", ["content": "", "android_silent": 1, "platforms": [3]], ["u-b", "u-d"]),
        ]
        let codes = try herald.send(cases.map(\.1))
        for ((name, _, expected), code) in zip(cases, codes) {
            let funnel = try herald.waitForMessage(code)
            let received = try herald.sinkHWIDs(code)
            #expect(Set(received) == expected, "\(name)")
            #expect(received.count == expected.count, "\(name): duplicates in \(received)")
            #expect(funnel["targeted"] == .int(Int64(expected.count)) && funnel["sent"] == .int(Int64(expected.count)),
                    "\(name): \(funnel.text)")
        }
        // Sink lines carry the device's token and the right channel.
        let all = try herald.sink(codes[0])
        let byHWID = Dictionary(uniqueKeysWithValues: all.map { ($0["hwid"]?.stringValue ?? "", $0) })
        #expect(byHWID["u-a"]?["token"] == "aaaa01" && byHWID["u-a"]?["platform"] == "apns")
        #expect(byHWID["u-b"]?["token"] == "fcm-b" && byHWID["u-b"]?["platform"] == "fcm")
        #expect(byHWID[player]?["token"] == "0b0b0b0b" && byHWID[player]?["platform"] == "apns")

        // `devices` entries the app does not know are listed per message, as Pushwoosh does; known
        // ones (even unsubscribed or without a token) are not.
        let (status, reply) = try herald.createMessage([["content": "some unknown", "devices": ["u-a", "ghost", "fcm-b", "u-f", "fcm-nope"]],
                                                        ["content": "all known", "devices": ["u-c"]]])
        let created = reply["response"]?["Messages"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(status == 200 && created.count == 2, "\(reply.text)")
        #expect(reply["response"]?["UnknownDevices"] == .object([created[0]: ["ghost", "fcm-nope"]]), "\(reply.text)")
        #expect(try herald.createMessage([["content": "known", "devices": ["u-a"]]]).body["response"]?["UnknownDevices"] == nil)
    }

    // MARK: - 3. Frequency caps

    @Test func theConfiguredPerDeviceThrottleSkipsTheThirdCampaign() throws {
        let herald = try HeraldProcesses(throttle: (count: 2, windowSeconds: 3600))
        try herald.startIngest()
        let capped = (0..<6).map { "cap-\($0)" }
        for (index, hwid) in capped.enumerated() { try herald.register(SDKDevice(hwid, platform: index % 2 == 0 ? 1 : 3)) }
        try herald.register(SDKDevice("fresh", platform: 3))
        try herald.startWorker()

        for round in 1...2 {
            let code = try herald.send(["content": .string("round \(round)"), "devices": .array(capped.map(JSON.string))])
            let funnel = try herald.waitForMessage(code)
            #expect(funnel["sent"] == 6 && funnel["throttled"] == 0, "round \(round): \(funnel.text)")
            #expect(Set(try herald.sinkHWIDs(code)) == Set(capped))
        }
        let third = try herald.send(["content": "round 3"])
        let funnel = try herald.waitForMessage(third)
        #expect(funnel["targeted"] == 7)
        #expect(funnel["throttled"] == 6)
        #expect(funnel["sent"] == 1)
        #expect(funnel["failed"] == 0)
        #expect(try herald.sinkHWIDs(third) == ["fresh"])
    }

    @Test func perMessageCappingDaysAndCount() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let hwids = (0..<4).map { "cap-\($0)" }
        for (index, hwid) in hwids.enumerated() { try herald.register(SDKDevice(hwid, platform: index % 2 == 0 ? 1 : 3)) }
        try herald.startWorker()

        func run(_ notification: JSON) throws -> JSON {
            try herald.waitForMessage(try herald.send(notification))
        }
        #expect(try run(["content": "first"])["sent"] == 4)
        // One push in the last day already: a cap of 1 skips everyone…
        let capOne = try run(["content": "cap 1", "capping_days": 1, "capping_count": 1])
        #expect(capOne["throttled"] == 4 && capOne["sent"] == 0, "\(capOne.text)")
        #expect(try herald.sinkHWIDs(capOne["code"]?.stringValue ?? "").isEmpty)
        // …a cap of 2 lets this one through (a throttled push does not count)…
        let capTwo = try run(["content": "cap 2", "capping_days": 1, "capping_count": 2])
        #expect(capTwo["sent"] == 4 && capTwo["throttled"] == 0, "\(capTwo.text)")
        // …and now two pushes were sent within the day.
        let capTwoAgain = try run(["content": "cap 2 again", "capping_days": "1", "capping_count": "2"])
        #expect(capTwoAgain["throttled"] == 4 && capTwoAgain["sent"] == 0, "\(capTwoAgain.text)")
        #expect(capTwoAgain["targeted"] == 4)
    }

    // MARK: - 4. transactionId

    @Test func aRepeatedTransactionIdReturnsTheSameCodeAndSendsOnce() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        for index in 0..<3 { try herald.register(SDKDevice("t-\(index)", platform: 1 + 2 * (index % 2))) }
        try herald.startWorker()

        let notification: JSON = ["content": "once only"]
        let first = try herald.send([notification], extra: ["transactionId": "order-1001"])
        let second = try herald.send([notification], extra: ["transactionId": "order-1001"])
        #expect(first == second)
        // transactionId inside the notification works the same way.
        let inner = try herald.send(["content": "inner", "transactionId": "inner-7"])
        #expect(try herald.send(["content": "inner", "transactionId": "inner-7"]) == inner)
        let other = try herald.send([notification], extra: ["transactionId": "order-1002"])
        #expect(other != first && other[0] != inner)

        // A request-level transactionId over several notifications gives each its own stable code.
        let pair = try herald.send([["content": "one", "platforms": [1]], ["content": "two", "platforms": [3]]], extra: ["transactionId": "batch-9"])
        #expect(Set(pair).count == 2)
        #expect(try herald.send([["content": "one", "platforms": [1]], ["content": "two", "platforms": [3]]], extra: ["transactionId": "batch-9"]) == pair)

        for code in [first[0], inner] {
            #expect(try herald.waitForMessage(code)["sent"] == 3)
        }
        // Asking again after it was sent still answers with the same code and sends nothing more.
        #expect(try herald.send([notification], extra: ["transactionId": "order-1001"]) == first)
        try herald.waitForMessage(other[0])
        #expect(try herald.sinkHWIDs(first[0]).sorted() == ["t-0", "t-1", "t-2"])
        #expect(try herald.sinkHWIDs(inner).count == 3)
        for code in pair { try herald.waitForMessage(code) }
        #expect(try herald.sinkHWIDs(pair[0]).sorted() == ["t-0", "t-2"])
        #expect(try herald.sinkHWIDs(pair[1]) == ["t-1"])
        #expect(try herald.messageCount() == 5)
    }

    // MARK: - 5. Scheduling

    @Test func aScheduledMessageWaitsForItsTime() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        for index in 0..<4 { try herald.register(SDKDevice("s-\(index)", platform: 1 + 2 * (index % 2))) }
        try herald.startWorker()

        // send_date has minute precision in the Pushwoosh docs; Herald's parser also takes seconds,
        // which lets the test wait 4 s instead of up to a minute.
        let due = unixNow() + 4
        let code = try herald.send(["content": "later", "send_date": .string(utcText(due, withSeconds: true))])
        #expect(try herald.funnel(code).body["status"] == "scheduled")
        let details = try herald.remote("getMessageDetails", message: code)
        #expect(details.body["response"]?["message"]?["send_date"] == .string(utcText(due)))

        let deadline = Date().addingTimeInterval(20)
        var statuses: [String] = []
        var checkedBeforeDue = 0
        while Date() < deadline {
            let funnel = try herald.funnel(code).body
            let lines = try herald.sink(code)
            // Only observations completed before the due second count (the server's clock has 1 s steps).
            let before = Date().timeIntervalSince1970 < Double(due)
            let status = funnel["status"]?.stringValue ?? "?"
            if statuses.last != status { statuses.append(status) }
            if before {
                checkedBeforeDue += 1
                #expect(status == "scheduled", "status \(status) before the due time")
                #expect(lines.isEmpty, "pushes written before the due time")
            }
            if status == "done" { break }
            usleep(100_000)
        }
        // Observed before the due time more than once (each look is two requests and a 100 ms pause,
        // so a busy machine makes fewer of them).
        #expect(checkedBeforeDue >= 3, "only \(checkedBeforeDue) observations before the due time")
        #expect(statuses.first == "scheduled" && statuses.last == "done", "\(statuses)")
        let funnel = try herald.funnel(code).body
        #expect(funnel["sent"] == 4 && funnel["targeted"] == 4)
        #expect(Set(try herald.sinkHWIDs(code)) == ["s-0", "s-1", "s-2", "s-3"])
    }

    @Test func sendDateInANamedTimeZoneIsConvertedToUTC() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let berlin = try herald.send(["content": "x", "send_date": "2035-07-01 12:00", "timezone": "Europe/Berlin"])
        let newYork = try herald.send(["content": "x", "send_date": "2035-01-15 09:30", "timezone": "America/New_York"])
        let utc = try herald.send(["content": "x", "send_date": "2035-01-15 09:30"])
        func details(_ code: String) throws -> JSON { try herald.remote("getMessageDetails", message: code).body["response"]?["message"] ?? .null }
        #expect(try details(berlin)["send_date"] == "2035-07-01 10:00")  // CEST, UTC+2
        #expect(try details(berlin)["send_date_given"] == "2035-07-01 12:00" && details(berlin)["timezone"] == "Europe/Berlin")
        #expect(try details(newYork)["send_date"] == "2035-01-15 14:30")  // EST, UTC-5
        #expect(try details(utc)["send_date"] == "2035-01-15 09:30")
        for code in [berlin, newYork, utc] { #expect(try details(code)["status"] == "scheduled") }
    }

    @Test func perDeviceTimezoneSendsOnlyWhereTheLocalTimeHasCome() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.register(SDKDevice("tz-east", platform: 1, timezone: 3 * 3600))
        try herald.register(SDKDevice("tz-plus2", platform: 3, timezone: 2 * 3600))
        try herald.register(SDKDevice("tz-utc", platform: 3, timezone: 0))
        try herald.register(SDKDevice("tz-west", platform: 1, timezone: -5 * 3600))
        try herald.register(SDKDevice("tz-unknown", platform: 1))
        try herald.startWorker()

        // Wall-clock time two hours from now (minute-aligned, so "now" in UTC+2 has just passed it).
        let now = unixNow()
        let wallClock = now - now % 60 + 2 * 3600
        let code = try herald.send(["content": "local", "send_date": .string(utcText(wallClock)), "ignore_user_timezone": false])
        let partial = try herald.waitForFunnel(code) { $0["sent"] == 2 }
        #expect(partial["status"] == "sending")
        // Give the pipeline time to (wrongly) send more; the others are hours away.
        usleep(1_000_000)
        let later = try herald.funnel(code).body
        #expect(later["status"] == "sending", "\(later.text)")
        #expect(later["targeted"] == 2 && later["sent"] == 2, "\(later.text)")
        #expect(Set(try herald.sinkHWIDs(code)) == ["tz-east", "tz-plus2"])
    }

    // MARK: - 6. deleteMessage

    @Test func aDeletedScheduledMessageIsNeverSent() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        for index in 0..<3 { try herald.register(SDKDevice("x-\(index)", platform: 1 + 2 * (index % 2))) }
        try herald.startWorker()

        let due = unixNow() + 2
        let code = try herald.send(["content": "cancelled", "send_date": .string(utcText(due, withSeconds: true))])
        let foreign = try herald.remote("deleteMessage", message: code, auth: "news-secret")
        #expect(foreign.status == 403)
        #expect(try herald.funnel(code).body["status"] == "scheduled")
        let deleted = try herald.remote("deleteMessage", message: code)
        #expect(deleted.status == 200 && deleted.body["status_code"] == 200 && deleted.body["response"] == .null)
        #expect(try herald.funnel(code).body["status"] == "deleted")
        #expect(try herald.remote("getMessageDetails", message: code).body["response"]?["message"]?["status"] == "deleted")

        let again = try herald.remote("deleteMessage", message: code)
        #expect(again.status == 200 && again.body["status_code"] == 210)
        #expect(again.body["status_message"]?.stringValue?.contains(code) == true)
        let unknown = try herald.remote("deleteMessage", message: "0000-00000000-00000000")
        #expect(unknown.status == 200 && unknown.body["status_code"] == 210)

        // Pushwoosh's documented shape names no application: the message's own is used, and an
        // unknown code and a foreign token get the same answer.
        let scheduled = try herald.send(["content": "also cancelled", "send_date": .string(utcText(due + 60, withSeconds: true))])
        let shortDetails = try herald.call("getMessageDetails", ["auth": "shop-secret", "message": .string(scheduled)])
        #expect(shortDetails.body["response"]?["message"]?["status"] == "scheduled", "\(shortDetails.body.text)")
        let foreignShort = try herald.call("deleteMessage", ["auth": "news-secret", "message": .string(scheduled)])
        let unknownShort = try herald.call("deleteMessage", ["auth": "shop-secret", "message": "0000-00000000-00000000"])
        #expect(foreignShort.body["status_code"] == 210 && foreignShort.body["status_message"]?.stringValue?.contains("not found") == true)
        #expect(unknownShort.body["status_code"] == 210 && unknownShort.body["status_message"]?.stringValue?.contains("not found") == true)
        #expect(try herald.call("deleteMessage", ["auth": "shop-secret", "message": .string(scheduled)]).body["status_code"] == 200)
        #expect(try herald.funnel(scheduled).body["status"] == "deleted")

        // A control message shows the pipeline works; the deleted one stays silent past its due time.
        let control = try herald.send(["content": "control"])
        try herald.waitForMessage(control)
        while unixNow() <= due { usleep(100_000) }
        usleep(800_000)  // the control message above shows a due message is sent well within this
        #expect(try herald.funnel(code).body["status"] == "deleted")
        #expect(try herald.sink(code).isEmpty)
        #expect(try herald.sinkHWIDs(control).count == 3)
        // A finished message cannot be deleted.
        #expect(try herald.remote("deleteMessage", message: control).body["status_code"] == 210)
        #expect(try herald.funnel(control).body["status"] == "done")
    }

    // MARK: - 7. Payloads

    @Test func payloadsCarryTheSDKKeysAndTheDeviceLanguage() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.register(SDKDevice("ios-de", platform: 1, token: "d0d0", language: "de"))
        try herald.register(SDKDevice("ios-ptbr", platform: 1, token: "d1d1", language: "pt-BR"))
        try herald.register(SDKDevice("ios-ja", platform: 1, token: "d2d2", language: "ja"))
        try herald.register(SDKDevice("and-fr", platform: 3, token: "fcm-fr", language: "fr"))
        try herald.register(SDKDevice("and-none", platform: 3, token: "fcm-none"))
        try herald.startWorker()

        let code = try herald.send([
            "content": ["en": "Hello", "de": "Hallo", "pt": "Olá", "fr": "Bonjour"],
            "title": ["en": "News", "de": "Neuigkeiten", "fr": "Nouvelles"],
            "data": ["order": 42, "items": ["a", "b"]], "link": "https://example.com/x",
            "ios_badges": 3, "android_priority": 2, "android_sound": "ping",
        ])
        try herald.waitForMessage(code)
        let hash = try #require(herald.remote("getMessageDetails", message: code).body["response"]?["message"]?["hash"]?.stringValue)
        let lines = try herald.sink(code)
        #expect(lines.count == 5)
        let byHWID = Dictionary(uniqueKeysWithValues: lines.map { ($0["hwid"]?.stringValue ?? "", $0["payload"] ?? .null) })

        for hwid in ["ios-de", "ios-ptbr", "ios-ja"] {
            let payload = try #require(byHWID[hwid])
            #expect(payload["pw_msg"] == "1", "\(hwid)")
            #expect(payload["p"] == .string(hash), "\(hwid)")
            #expect(payload["l"] == "https://example.com/x")
            let u = try #require(payload["u"]?.stringValue, "u must be a JSON string")
            #expect(try JSON.parse(u) == ["order": 42, "items": ["a", "b"]])
            #expect(payload["aps"]?["mutable-content"] == 1)
            #expect(payload["aps"]?["badge"] == 3)
        }
        #expect(byHWID["ios-de"]?["aps"]?["alert"] == ["title": "Neuigkeiten", "body": "Hallo"])
        #expect(byHWID["ios-ptbr"]?["aps"]?["alert"] == ["title": "News", "body": "Olá"])  // pt-BR → pt; title falls back to en
        #expect(byHWID["ios-ja"]?["aps"]?["alert"] == ["title": "News", "body": "Hello"])

        for (hwid, token) in [("and-fr", "fcm-fr"), ("and-none", "fcm-none")] {
            let message = try #require(byHWID[hwid]?["message"])
            #expect(message["token"] == .string(token))
            #expect(message["notification"] == nil, "data-only messages")
            let data = try #require(message["data"]?.objectValue)
            #expect(data.values.allSatisfy { $0.stringValue != nil }, "every FCM data value is a string: \(data)")
            #expect(data["pw_msg"] == "1" && data["p"] == .string(hash))
            #expect(data["s"] == "ping" && data["pri"] == "2")
            #expect(try data["u"]?.stringValue.map { try JSON.parse($0) } == ["order": 42, "items": ["a", "b"]])
        }
        #expect(byHWID["and-fr"]?["message"]?["data"]?["title"] == "Bonjour")
        #expect(byHWID["and-fr"]?["message"]?["data"]?["header"] == "Nouvelles")
        #expect(byHWID["and-none"]?["message"]?["data"]?["title"] == "Hello")
        #expect(byHWID["and-none"]?["message"]?["data"]?["header"] == "News")

        // The SDKs echo `p` as `hash`: opens and deliveries are counted per device in the funnel.
        for _ in 0..<2 { try herald.ok("pushStat", ["application": .string(Self.app), "hwid": "ios-de", "hash": .string(hash)]) }
        try herald.ok("pushStat", ["application": .string(Self.app), "hwid": "and-fr", "hash": .string(hash)])
        try herald.ok("messageDeliveryEvent", ["application": .string(Self.app), "hwid": "and-fr", "hash": .string(hash)])
        let counted = try herald.funnel(code).body
        #expect(counted["opened"] == 2 && counted["delivered"] == 1, "\(counted.text)")

        // Without a title the iOS alert is the plain body string; every line of a message shares `p`.
        let plain = try herald.send(["content": "Just text"])
        try herald.waitForMessage(plain)
        let plainLines = try herald.sink(plain)
        #expect(plainLines.count == 5)
        #expect(Set(plainLines.compactMap { $0["payload"]?["p"]?.stringValue ?? $0["payload"]?["message"]?["data"]?["p"]?.stringValue }).count == 1)
        #expect(plainLines.first { $0["hwid"] == "ios-ja" }?["payload"]?["aps"]?["alert"] == "Just text")
        #expect(plainLines.first { $0["hwid"] == "and-fr" }?["payload"]?["message"]?["data"]?["title"] == "Just text")
        let plainHash = plainLines.first { $0["platform"] == "apns" }?["payload"]?["p"]
        #expect(plainHash != nil && plainHash != .string(hash))
    }

    // MARK: - 8. Bad input

    func expectRejected(_ herald: HeraldProcesses, _ notifications: [JSON], mentioning words: [String],
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (status, body) = try herald.createMessage(notifications)
        #expect(status == 200, sourceLocation: sourceLocation)
        #expect(body["status_code"] == 210, "\(body.text)", sourceLocation: sourceLocation)
        let message = body["status_message"]?.stringValue ?? ""
        for word in words {
            #expect(message.contains(word), "\"\(message)\" should mention \(word)", sourceLocation: sourceLocation)
        }
    }

    @Test func badRequestsAreRejectedAndCreateNothing() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.register(SDKDevice("b-1", platform: 1, tags: ["Level": 3, "City": "Oslo", "VIP": true,
                                                                  "Signup": "2024-05-06 07:08", "Interests": ["a"]]))
        try herald.register(SDKDevice("b-2", platform: 3))
        try herald.startWorker()

        try expectRejected(herald, [["content": "x", "conditions": [["Level", "LIKE", 3]]]], mentioning: ["conditions[0]", "LIKE"])
        try expectRejected(herald, [["content": "x", "conditions": [["Level", "EQ", "high"]]]], mentioning: ["Level", "number"])
        try expectRejected(herald, [["content": "x", "conditions": [["City", "GTE", "Oslo"]]]], mentioning: ["City", "GTE"])
        try expectRejected(herald, [["content": "x", "conditions": [["VIP", "EQ", "maybe"]]]], mentioning: ["VIP"])
        try expectRejected(herald, [["content": "x", "conditions": [["Signup", "GTE", "last week"]]]], mentioning: ["Signup"])
        try expectRejected(herald, [["content": "x", "conditions": [["Level", "BETWEEN", [9, 1]]]]], mentioning: ["BETWEEN"])
        try expectRejected(herald, [["content": "x", "conditions": [["Level", "IN", 3]]]], mentioning: ["Level"])
        try expectRejected(herald, [["content": "x", "conditions": [["Unknown", "EQ", 1]]]], mentioning: ["Unknown"])
        try expectRejected(herald, [["content": "x", "conditions": [["Level", "EQ", 1]], "conditions_operator": "XOR"]],
                           mentioning: ["conditions_operator"])
        try expectRejected(herald, [["content": "x", "send_date": "tomorrow"]], mentioning: ["send_date"])
        try expectRejected(herald, [["content": "x", "send_date": "2030-13-01 10:00"]], mentioning: ["send_date"])
        try expectRejected(herald, [["content": "x", "send_date": "2030-01-01 10:00", "timezone": "Mars/Olympus"]], mentioning: ["timezone"])
        try expectRejected(herald, [["content": "x", "filter": "Gold", "conditions": [["Level", "EQ", 1]]]], mentioning: ["filter", "conditions"])
        try expectRejected(herald, Array(repeating: ["content": "x"], count: 1001), mentioning: ["1001", "1000"])
        try expectRejected(herald, [], mentioning: ["notifications"])
        try expectRejected(herald, [["content": .string(String(repeating: "x", count: 4200))]], mentioning: ["content", "4096"])
        try expectRejected(herald, [["title": "no content"]], mentioning: ["content"])
        // Silent on iOS only: Android still shows it, so content is still needed.
        try expectRejected(herald, [["ios_silent": 1]], mentioning: ["content"])
        try expectRejected(herald, [["content": "x", "ios_interruption_level": "urgent"]], mentioning: ["ios_interruption_level"])
        try expectRejected(herald, [["content": "x", "platforms": [4]]], mentioning: ["platforms"])
        try expectRejected(herald, [["content": "x", "capping_days": 1]], mentioning: ["capping_count"])
        // One bad notification rejects the whole call: the good one before it is not created either.
        try expectRejected(herald, [["content": "good"], ["content": "bad", "send_date": "soon"]], mentioning: ["notifications[1]", "send_date"])

        // Authentication: HTTP 403, nothing created.
        for auth in [nil, "wrong", "news-secret"] as [String?] {
            let (status, body) = try herald.createMessage([["content": "x"]], auth: auth)
            #expect(status == 403, "auth \(auth ?? "none")")
            #expect(body["status_code"] == 403)
        }
        let unknownApp = try herald.call("createMessage", ["auth": "shop-secret", "application": "NOPE-00000", "notifications": [["content": "x"]]])
        #expect(unknownApp.status == 200 && unknownApp.body["status_code"] == 210)
        #expect(try herald.funnel("0000-00000000-00000000").status == 404)

        #expect(try herald.messageCount() == 0)

        // A valid message afterwards is the only thing that reaches the sink.
        let code = try herald.send(["content": "valid"])
        let funnel = try herald.waitForMessage(code)
        #expect(funnel["sent"] == 2)
        #expect(try herald.messageCount() == 1)
        let lines = try herald.sinkLines()
        #expect(lines.count == 2 && lines.allSatisfy { $0["message"] == .string(code) })
        // The funnel of a message is not visible with another app's token.
        #expect(try herald.funnel(code, token: "news-secret").status == 404)
    }

    @Test func theAuthorizationHeaderAuthenticatesToo() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let body = JSON.object(["request": ["application": .string(Self.app), "notifications": [["content": "header auth"]]]]).encoded()
        let accepted = try herald.client.request("POST", "/json/1.3/createMessage", body: body,
                                                 headers: [("Content-Type", "application/json"), ("Authorization", "Token shop-secret")])
        #expect(accepted.status == 200)
        #expect(try JSON.parse(accepted.body)["response"]?["Messages"]?.arrayValue?.count == 1)
        let refused = try herald.client.request("POST", "/json/1.3/createMessage", body: body,
                                                headers: [("Content-Type", "application/json"), ("Authorization", "Token news-secret")])
        #expect(refused.status == 403)
        #expect(try herald.messageCount() == 1)
    }

    // MARK: - 9. Workers joining and leaving

    @Test func aMessageWaitsForAWorkerAndCompletesWhenOneJoins() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        for index in 0..<5 { try herald.register(SDKDevice("w-\(index)", platform: 1 + 2 * (index % 2))) }
        let code = try herald.send(["content": "waiting"])
        let deadline = Date().addingTimeInterval(1)
        while Date() < deadline {
            let status = try herald.funnel(code).body["status"]
            #expect(status == "queued" || status == "sending", "\(String(describing: status))")
            usleep(100_000)
        }
        #expect(try herald.sink(code).isEmpty)
        try herald.startWorker()
        let funnel = try herald.waitForMessage(code)
        #expect(funnel["sent"] == 5 && funnel["targeted"] == 5)
        #expect(try herald.sinkHWIDs(code).count == 5)
    }

    @Test(arguments: TestDatabase.tested) func aWorkerKilledMidCampaignIsReplacedAndNothingIsLost(_ database: TestDatabase) throws {
        let herald = try HeraldProcesses(database: database)
        try herald.startIngest()
        let hwids = (0..<12).map { String(format: "k-%02d", $0) }
        for (index, hwid) in hwids.enumerated() { try herald.register(SDKDevice(hwid, platform: 1 + 2 * (index % 2))) }
        try herald.startWorker()
        try herald.waitForWorkers(1)
        // 4 pushes per second: the worker holds the shard's lease for about 3 s.
        let code = try herald.send(["content": "slow", "send_rate": 4])
        let deadline = Date().addingTimeInterval(10)
        while try herald.sink(code).count < 2, Date() < deadline { usleep(50_000) }
        herald.killWorker(0)
        let atKill = try herald.sink(code).count
        #expect(atKill >= 2 && atKill < 12, "\(atKill) pushes when the worker was killed")
        #expect(try herald.funnel(code).body["status"] == "sending")
        // Pushes the dead worker sent but had not recorded yet: the only ones that may go twice.
        let recorded = try herald.count("""
            SELECT count(*) FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE m.code = '\(code)' AND d.status = 'sent'
            """)
        #expect(recorded >= 0 && recorded <= atKill)

        try herald.startWorker()
        let funnel = try herald.waitForMessage(code, timeout: 25)
        #expect(funnel["targeted"] == 12 && funnel["sent"] == 12, "\(funnel.text)")
        let received = try herald.sinkHWIDs(code)
        #expect(Set(received) == Set(hwids))
        // At most the batch in flight at the kill is sent twice: one push at this rate, two when a
        // slow commit let a second come due.
        #expect(received.count - 12 <= atKill - recorded, "\(received.count) lines; \(atKill) sent and \(recorded) recorded at the kill")
        // The dead worker's lease went back to the pool once, before the new worker took the shard.
        let metrics = try herald.client.request("GET", "/metrics").text
        #expect(metrics.contains("\nherald_shard_leases_released_total 1\n"), "\(metrics)")
    }

    @Test func aWorkerStoppedWithSIGTERMHandsItsShardBackWithoutDuplicates() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let hwids = (0..<12).map { String(format: "g-%02d", $0) }
        for (index, hwid) in hwids.enumerated() { try herald.register(SDKDevice(hwid, platform: 1 + 2 * (index % 2))) }
        try herald.startWorker()
        try herald.waitForWorkers(1)
        let code = try herald.send(["content": "slow", "send_rate": 4])
        let deadline = Date().addingTimeInterval(10)
        while try herald.sink(code).count < 2, Date() < deadline { usleep(50_000) }
        let worker = herald.workers[0]
        kill(worker.processIdentifier, SIGTERM)
        worker.waitUntilExit()
        #expect(worker.terminationStatus == 0)
        let atStop = try herald.sink(code).count
        #expect(atStop < 12, "the worker finished before it was stopped")
        #expect(try herald.funnel(code).body["sent"] == .int(Int64(atStop)), "everything written was recorded before the exit")

        try herald.startWorker()
        let funnel = try herald.waitForMessage(code)
        #expect(funnel["targeted"] == 12 && funnel["sent"] == 12, "\(funnel.text)")
        // A graceful stop records its batch before handing the shard back: nobody gets it twice.
        #expect(try herald.sinkHWIDs(code).sorted() == hwids)
    }

    @Test func anAcceptedMessageSurvivesKill9OfIngest() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        for index in 0..<4 { try herald.register(SDKDevice("r-\(index)", platform: 1 + 2 * (index % 2))) }
        let code = try herald.send(["content": "durable"])
        herald.stopIngest(signal: SIGKILL)
        try herald.startIngest()
        try herald.startWorker()
        let funnel = try herald.waitForMessage(code)
        #expect(funnel["sent"] == 4)
        #expect(try herald.sinkHWIDs(code).count == 4)
    }
}
