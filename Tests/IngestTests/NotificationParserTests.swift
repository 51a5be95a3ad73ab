import Testing
@testable import Ingest
import Core

/// One notification of createMessage (or the fields of createTargetedMessage) becomes the message
/// Herald stores: its content, platforms, audience and schedule; a field a user got wrong is
/// refused with the message the 210 reply carries, naming the field by its path.
@Suite struct NotificationParserTests {
    static let now: Int64 = 1_800_000_000
    static let tagTypes: [String: TagType] = ["Age": .integer, "City": .string]

    func parse(_ fields: [String: JSON], path: String? = "notifications[0]") throws -> MessageSpec {
        try NotificationParser(fields: fields, path: path, tagTypes: Self.tagTypes, now: Self.now).parse()
    }

    func problem(_ fields: [String: JSON], path: String? = "notifications[0]") -> String? {
        NotificationParser(fields: fields, path: path, tagTypes: Self.tagTypes, now: Self.now).refusal()
    }

    @Test func aPlainNotificationGoesToEveryoneNowWithItsContent() throws {
        let spec = try parse(["content": "Hello"])
        #expect(spec.content == ["default": "Hello"])
        #expect(spec.platforms == nil && spec.devices == nil && spec.users == nil && spec.filter == nil)
        #expect(spec.conditions.isEmpty && spec.conditionsOperator == .and)
        #expect(spec.schedule == MessageSpec.Schedule(sendAt: Self.now, perDeviceTimezone: false))
        // Languages are matched against what devices register, in lower case.
        #expect(try parse(["content": ["EN": "Hi", "de": "Hallo"]]).content == ["en": "Hi", "de": "Hallo"])
    }

    @Test func contentIsRequiredWhereverTheNotificationIsShown() throws {
        let required = "notifications[0].content: is required (unless the message is silent, or gives ios_content / android_content, "
            + "on every platform it reaches; browsers need it)"
        #expect(problem([:]) == required)
        #expect(problem(["content": ""]) == required)
        #expect(problem(["platforms": [1], "android_content": "Only Android"]) == required)
        #expect(problem(["platforms": [.int(Int64(Platform.chrome))], "ios_silent": true, "android_silent": true]) == required)
        // Silent everywhere it goes, or content of its own on each platform: no `content` needed.
        #expect(problem(["ios_silent": 1, "android_silent": true]) == nil)
        #expect(problem(["platforms": [1], "ios_content": "Only iOS"]) == nil)
        #expect(problem(["ios_content": "iOS", "android_content": "Android"]) == nil)
        #expect(problem(["content": ["fr": 3]]) == "notifications[0].content.fr: must be a string")
        #expect(problem(["content": 7]) == "notifications[0].content: must be a string or an object of language → text, found number")
    }

    @Test func platformsAreCheckedAgainstTheKnownDeviceTypes() throws {
        #expect(try parse(["content": "x", "platforms": [1, "3"]]).platforms == [1, 3])
        // Amazon is a Pushwoosh device type Herald does not deliver to: accepted, it matches no device.
        #expect(try parse(["content": "x", "platforms": [.int(Int64(Platform.amazon))]]).platforms == [Platform.amazon])
        #expect(problem(["content": "x", "platforms": []]) == "notifications[0].platforms: must not be empty")
        #expect(problem(["content": "x", "platforms": [1, 4]]) == "notifications[0].platforms: 4 is not a known device_type code")
        #expect(problem(["content": "x", "platforms": ["ios"]]) == "notifications[0].platforms: must be an array of integers")
        #expect(problem(["content": "x", "platforms": 1]) == "notifications[0].platforms: must be an array of integers")
    }

    @Test func theAudienceIsUsersElseDevicesElseConditions() throws {
        let users = try parse(["content": "x", "users": ["u1"], "devices": ["h1"], "conditions": [["Age", "GTE", 18]]])
        #expect(users.users == ["u1"] && users.devices == nil && users.conditions.isEmpty)
        let devices = try parse(["content": "x", "devices": ["h1", "h2"], "conditions": [["Age", "GTE", 18]]])
        #expect(devices.devices == ["h1", "h2"] && devices.conditions.isEmpty)

        let tagged = try parse(["content": "x", "conditions_operator": "or",
                                "conditions": [["Age", "BETWEEN", [18, 30]], ["City", "IN", ["Berlin", "Oslo"]], ["Language", "EQ", "pt-BR"]]])
        #expect(tagged.conditionsOperator == .or)
        #expect(tagged.conditions == [
            TagCondition(tag: "Age", type: .integer, op: .between, operands: [.number(18), .number(30)]),
            TagCondition(tag: "City", type: .string, op: .inList, operands: [.text("Berlin"), .text("Oslo")]),
            TagCondition(tag: "Language", type: .string, op: .eq, operands: [.text("pt")]),
        ])
    }

    @Test func aWrongAudienceIsRefusedNamingTheField() {
        #expect(problem(["content": "x", "devices": []]) == "notifications[0].devices: must not be empty")
        #expect(problem(["content": "x", "devices": [7]]) == "notifications[0].devices: must be an array of strings")
        let many = JSON.array((0...1000).map { .string("h\($0)") })
        #expect(problem(["content": "x", "devices": many]) == "notifications[0].devices: has 1001 entries; at most 1000 per notification")
        #expect(problem(["content": "x", "users": "u1"]) == "notifications[0].users: must be an array of strings")
        #expect(problem(["content": "x", "filter": "VIPs"]) == "notifications[0].filter: saved filters are not supported by Herald; send conditions instead")
        #expect(problem(["content": "x", "filter": "VIPs", "conditions": [["Age", "GTE", 18]]])
                    == "notifications[0].filter: filter and conditions cannot be combined; use one of them")
        #expect(problem(["content": "x", "conditions_operator": "XOR"]) == "notifications[0].conditions_operator: must be AND or OR")
        #expect(problem(["content": "x", "conditions": ["Age", "GTE", 18]])
                    == "notifications[0].conditions[0]: a condition must be an array [tag, operator, operand]")
        #expect(problem(["content": "x", "conditions": ["Age": 18]]) == "notifications[0].conditions: must be an array of [tag, operator, operand]")
        #expect(problem(["content": "x", "conditions": [["Height", "GTE", 180]]])
                    == "notifications[0].conditions[0]: tag \"Height\" is not defined in this application")
        #expect(problem(["content": "x", "conditions": [["Age", "GTE", 1], ["City", "GTE", "B"]]])
                    == "notifications[0].conditions[1]: operator GTE does not apply to tag \"City\" of type string")
        let tooMany = JSON.array(Array(repeating: ["Age", "GTE", 18], count: 101))
        #expect(problem(["content": "x", "conditions": tooMany]) == "notifications[0].conditions: at most 100 conditions")
    }

    @Test func theSendDateIsTheWallClockOfItsTimeZoneOrOfEachDevice() throws {
        // 2030-01-02 10:00 UTC is 1893578400; Berlin is UTC+1 in January and UTC+2 in July.
        let utc = try parse(["content": "x", "send_date": "2030-01-02 10:00"]).schedule
        #expect(utc.sendAt == 1_893_578_400 && !utc.perDeviceTimezone && utc.givenSendDate == "2030-01-02 10:00")
        let winter = try parse(["content": "x", "send_date": "2030-01-02 10:00", "timezone": "Europe/Berlin"]).schedule
        #expect(winter.sendAt == 1_893_578_400 - 3600 && winter.givenTimezone == "Europe/Berlin")
        let summer = try parse(["content": "x", "send_date": "2030-07-02 10:00", "timezone": "Europe/Berlin"]).schedule
        #expect(summer.sendAt == 1_909_216_800 - 7200)
        let local = try parse(["content": "x", "send_date": "2030-01-02 10:00", "ignore_user_timezone": false]).schedule
        #expect(local.sendAt == 1_893_578_400 && local.perDeviceTimezone)
        #expect(try parse(["content": "x", "send_date": "NOW"]).schedule.sendAt == Self.now)

        #expect(problem(["content": "x", "send_date": "tomorrow"])
                    == "notifications[0].send_date: must be \"now\" or \"YYYY-MM-DD HH:mm\", found \"tomorrow\"")
        #expect(problem(["content": "x", "send_date": "2030-01-02"])
                    == "notifications[0].send_date: must be \"now\" or \"YYYY-MM-DD HH:mm\", found \"2030-01-02\"")
        #expect(problem(["content": "x", "send_date": "2030-01-02 10:00", "timezone": "Mars/Olympus"])
                    == "notifications[0].timezone: unknown time zone \"Mars/Olympus\"")
    }

    @Test func ratesCapsBadgesAndPlatformOptionsAreCheckedAndKept() throws {
        let spec = try parse(["content": "x", "send_rate": 100, "capping_days": 7, "capping_count": 2, "ios_badges": "+2",
                              "android_badges": 5, "android_priority": -1, "ios_ttl": "60", "data": #"{"order": 42}"#])
        #expect(spec.sendRate == 100 && spec.cappingDays == 7 && spec.cappingCount == 2)
        #expect(spec.ios.badges == .add(2) && spec.android.badges == .set(5))
        #expect(spec.android.priority == -1 && spec.ios.ttl == 60)
        #expect(spec.data == ["order": 42])

        #expect(problem(["content": "x", "send_rate": 0]) == "notifications[0].send_rate: must be at least 1 push per second")
        #expect(problem(["content": "x", "capping_days": 7]) == "notifications[0].capping_count: capping_days and capping_count go together")
        #expect(problem(["content": "x", "capping_count": 1]) == "notifications[0].capping_days: capping_days and capping_count go together")
        #expect(problem(["content": "x", "capping_days": 400, "capping_count": 1]) == "notifications[0].capping_days: must be between 1 and 365")
        #expect(problem(["content": "x", "ios_badges": -1])
                    == "notifications[0].ios_badges: an absolute badge must not be negative (use \"-n\" to decrease)")
        #expect(problem(["content": "x", "android_priority": 3]) == "notifications[0].android_priority: must be between -2 and 2")
        #expect(problem(["content": "x", "ios_ttl": "soon"]) == "notifications[0].ios_ttl: must be an integer, found string")
        #expect(problem(["content": "x", "ios_ttl": -5]) == "notifications[0].ios_ttl: must not be negative")
        #expect(problem(["content": "x", "ios_silent": "maybe"]) == "notifications[0].ios_silent: must be a boolean or 0/1, found string")
        #expect(problem(["content": "x", "ios_interruption_level": "loud"])
                    == "notifications[0].ios_interruption_level: must be passive, active, time-sensitive or critical")
        #expect(problem(["content": "x", "data": "[1]"]) == "notifications[0].data: must be an object or a string holding a JSON object")
        #expect(problem(["content": "x", "inbox_days": 3, "inbox_date": "2030-01-02"])
                    == "notifications[0].inbox_days: inbox_date and inbox_days cannot be combined; use one of them")
    }

    /// createTargetedMessage's fields are the request's own: errors name them without a path.
    @Test func theRequestsOwnFieldsAreNamedWithoutAPath() throws {
        #expect(try parse(["content": "x", "send_rate": 5], path: nil).sendRate == 5)
        #expect(problem(["send_rate": 0, "content": "x"], path: nil) == "send_rate: must be at least 1 push per second")
        #expect(problem(["content": "x", "send_date": "soon"], path: nil) == "send_date: must be \"now\" or \"YYYY-MM-DD HH:mm\", found \"soon\"")
    }
}

extension NotificationParser {
    /// The `status_message` of the 210 reply `parse()` leads to, or nil when it accepts the fields.
    func refusal() -> String? {
        do {
            _ = try parse()
            return nil
        } catch let error as ArgumentError {
            return error.message
        } catch {
            return "not an argument error: \(error)"
        }
    }
}
