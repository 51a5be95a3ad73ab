import Testing
@testable import Core

@Suite struct PayloadBuilderTests {
    func spec(_ content: MessageSpec.LocalizedText = ["default": "Hello"]) -> MessageSpec {
        MessageSpec(content: content)
    }

    func apns(_ spec: MessageSpec, language: String? = nil, badge: Int64 = 0) -> JSON {
        PayloadBuilder.apns(spec, hash: "h1", language: language, badge: badge)
    }

    func fcmData(_ spec: MessageSpec, language: String? = nil) -> [String: JSON] {
        PayloadBuilder.fcm(spec, hash: "h1", token: "tok", language: language, badge: 0)["message"]?["data"]?
            .objectValue ?? [:]
    }

    // MARK: APNs

    @Test func apnsCarriesTheStatsKeysAndMutableContent() throws {
        var message = spec()
        message.data = ["order": 42, "tags": ["a", "b"]]
        message.link = "https://example.com/x"
        message.ios.attachment = "https://example.com/a.png"
        let payload = apns(message)
        #expect(payload["pw_msg"] == "1")
        #expect(payload["p"] == "h1")
        let u = try #require(payload["u"]?.stringValue)
        #expect(try JSON.parse(u) == message.data)
        #expect(payload["l"] == "https://example.com/x")
        #expect(payload["attachment"] == "https://example.com/a.png")
        #expect(payload["aps"]?["mutable-content"] == 1)
        #expect(payload["aps"]?["alert"] == "Hello")
        #expect(payload["aps"]?["badge"] == nil)
        #expect(payload["rm"] == nil)
    }

    @Test func apnsOmitsUWithoutData() {
        #expect(apns(spec())["u"] == nil)
    }

    @Test func alertBecomesAnObjectWithTitleOrSubtitle() {
        var message = spec()
        message.title = ["default": "Title"]
        #expect(apns(message)["aps"]?["alert"] == ["title": "Title", "body": "Hello"])
        message.title = nil
        message.subtitle = ["default": "Sub"]
        #expect(apns(message)["aps"]?["alert"] == ["subtitle": "Sub", "body": "Hello"])
    }

    @Test(arguments: [("zh-Hans", "简体"), ("zh-Hant", "中文"), ("ZH", "中文"), ("fr", "Hello"), (nil, "Hello")])
    func picksTheLanguageWithFallback(_ language: String?, _ expected: String) {
        let message = spec(["zh-Hans": "简体", "zh": "中文", "en": "Hello", "de": "Hallo"])
        #expect(apns(message, language: language)["aps"]?["alert"] == .string(expected))
    }

    @Test func iosTextsOverrideTheGenericOnes() {
        var message = spec(["en": "Generic", "de": "Allgemein"])
        message.title = ["en": "T"]
        message.ios.content = ["en": "iOS body"]
        message.ios.title = ["en": "iOS title"]
        message.ios.subtitle = ["en": "iOS sub"]
        #expect(apns(message, language: "en")["aps"]?["alert"]
            == ["title": "iOS title", "subtitle": "iOS sub", "body": "iOS body"])
    }

    @Test func relativeBadgeAddsToTheStoredOne() {
        var message = spec()
        message.ios.badges = .add(2)
        let aps = apns(message, badge: 3)["aps"]
        #expect(aps?["badge"] == 5)
        #expect(aps?["pw_badge"] == "+2")
        message.ios.badges = .add(-5)
        #expect(apns(message, badge: 3)["aps"]?["badge"] == 0)
    }

    @Test func absoluteBadgeIgnoresTheStoredOne() {
        var message = spec()
        message.ios.badges = .set(7)
        let aps = apns(message, badge: 3)["aps"]
        #expect(aps?["badge"] == 7)
        #expect(aps?["pw_badge"] == nil)
    }

    @Test func standardApsKeys() {
        var message = spec()
        message.ios.sound = "ping.caf"
        message.ios.categoryID = "reply"
        message.ios.threadID = "chat-1"
        let aps = apns(message)["aps"]
        #expect(aps?["sound"] == "ping.caf")
        #expect(aps?["category"] == "reply")
        #expect(aps?["thread-id"] == "chat-1")
    }

    @Test func silentPushIsBackgroundOnly() {
        var message = spec()
        message.title = ["default": "T"]
        message.ios.silent = true
        message.ios.sound = "ping.caf"
        message.ios.badges = .add(1)
        message.ios.ttl = 60
        let payload = apns(message, badge: 2)
        #expect(payload["aps"] == ["content-available": 1])
        #expect(payload["pw_msg"] == "1")
        let headers = PayloadBuilder.apnsHeaders(message, now: 1_000)
        #expect(headers == .init(pushType: "background", priority: 5, expiration: 1_060, collapseID: nil))
    }

    @Test func interruptionLevelReachesApsAndASilentFCMMessageHasNoEmptyText() {
        var message = spec()
        message.ios.interruptionLevel = "time-sensitive"
        #expect(apns(message, badge: 0)["aps"]?["interruption-level"] == "time-sensitive")
        var silent = MessageSpec(content: [:])
        silent.android.silent = true
        let data = PayloadBuilder.fcm(silent, hash: "h", token: "t", language: nil, badge: 0)["message"]?["data"]
        #expect(data?["silent"] == "1" && data?["title"] == nil, "\(data?.text ?? "")")
    }

    @Test func headersOfAVisiblePush() {
        var message = spec()
        #expect(PayloadBuilder.apnsHeaders(message, now: 1_000)
            == .init(pushType: "alert", priority: 10, expiration: nil, collapseID: nil))
        message.ios.ttl = 0
        message.ios.collapseID = "score"
        #expect(PayloadBuilder.apnsHeaders(message, now: 1_000)
            == .init(pushType: "alert", priority: 10, expiration: 0, collapseID: "score"))
    }

    @Test func rootParamsMergeIntoApsAndTheRoot() {
        var message = spec()
        message.ios.rootParams = [
            "aps": ["interruption-level": "time-sensitive", "mutable-content": 0],
            "custom": ["k": 1], "pw_msg": "0", "p": "other",
        ]
        let payload = apns(message)
        #expect(payload["aps"]?["interruption-level"] == "time-sensitive")
        #expect(payload["aps"]?["mutable-content"] == 0)
        #expect(payload["aps"]?["alert"] == "Hello")
        #expect(payload["custom"] == ["k": 1])
        #expect(payload["pw_msg"] == "1")
        #expect(payload["p"] == "h1")
    }

    @Test func richMediaIsTheLinkTheSDKDownloads() {
        var message = spec()
        message.richMedia = "sale"
        message.richMediaLink = RichMediaLink(url: "https://push.example.com/rich-media/ABCDE-12345/sale.zip", ts: "1780000001")
        #expect(apns(message)["rm"] == ["url": "https://push.example.com/rich-media/ABCDE-12345/sale.zip", "ts": "1780000001", "tags": [:]])
    }

    @Test func aMessageKeptInInboxesTellsTheSDKItsInboxIdAndExpiry() throws {
        var message = spec()
        message.inbox = MessageSpec.InboxOptions(image: "https://shop.example/i.png", days: 7)
        let link = try #require(PayloadBuilder.InboxLink(message, code: "ABCD-00000001-00000002", sentAt: 1_000))
        #expect(link.expiresAt == 1_000 + 7 * 86_400)
        let ios = PayloadBuilder.apns(message, hash: "h1", language: nil, badge: 0, inbox: link)
        #expect(ios["pw_inbox"] == "ABCD-00000001-00000002")
        #expect(ios["inbox_params"] == ["rt": "605800", "image": "https://shop.example/i.png"])
        let android = PayloadBuilder.fcm(message, hash: "h1", token: "tok", language: nil, badge: 0, inbox: link)["message"]?["data"]
        #expect(android?["pw_inbox"] == "ABCD-00000001-00000002")
        #expect(try JSON.parse(try #require(android?["inbox_params"]?.stringValue)) == ["rt": "605800", "image": "https://shop.example/i.png"])
        // Without inbox options there is no link, and no inbox keys.
        #expect(PayloadBuilder.InboxLink(spec(), code: "ABCD-00000001-00000002", sentAt: 1_000) == nil)
        #expect(apns(spec())["pw_inbox"] == nil && fcmData(spec())["inbox_params"] == nil)
    }

    @Test func theSizeCheckCountsTheInboxKeys() {
        var message = spec(["default": String(repeating: "a", count: 2_000)])
        #expect(PayloadBuilder.sizeCheck(message) == nil)
        message.inbox = MessageSpec.InboxOptions(image: "https://shop.example/" + String(repeating: "i", count: 2_000))
        #expect(PayloadBuilder.sizeCheck(message)?.contains("exceeds") == true)
    }

    // MARK: Live Activities

    func liveActivity(_ event: MessageSpec.LiveActivity.Event) -> MessageSpec {
        var message = spec(["default": "Your order is on its way"])
        message.title = ["default": "Order"]
        message.ios.sound = "ding"
        var activity = MessageSpec.LiveActivity(id: "order-7", event: event, contentState: ["eta": 12], timestamp: 1_700)
        activity.attributesType = "OrderAttributes"
        activity.attributes = ["order": "7"]
        activity.dismissalDate = 1_900
        message.liveActivity = activity
        return message
    }

    @Test func aLiveActivityStartCarriesAttributesAndTheFallbackAlert() {
        let payload = apns(liveActivity(.start))
        #expect(payload == [
            "pw_msg": "1", "p": "h1",
            "aps": [
                "timestamp": 1_700, "event": "start", "content-state": ["eta": 12],
                "attributes-type": "OrderAttributes", "attributes": ["order": "7"],
                "alert": ["title": "Order", "body": "Your order is on its way"], "dismissal-date": 1_900,
            ],
        ], "\(payload.text)")
    }

    @Test func aLiveActivityUpdateOrEndHasNoAttributesNorAlert() {
        for event in [MessageSpec.LiveActivity.Event.update, .end] {
            let payload = apns(liveActivity(event))
            #expect(payload["aps"] == [
                "timestamp": 1_700, "event": .string(event.rawValue), "content-state": ["eta": 12], "dismissal-date": 1_900,
            ], "\(payload.text)")
        }
    }

    @Test func aLiveActivityGoesToTheLiveActivityTopicAsItsPushType() {
        var message = liveActivity(.update)
        message.ios.silent = true
        message.ios.collapseID = "ignored"
        #expect(PayloadBuilder.apnsHeaders(message, now: 1_000)
            == .init(pushType: "liveactivity", priority: 10, expiration: nil, collapseID: nil,
                     topicSuffix: ".push-type.liveactivity"))
        #expect(PayloadBuilder.apnsHeaders(spec(), now: 1_000).topicSuffix == "")
    }

    @Test func aLiveActivityStartWithoutTextHasNoAlertAndAStaleDateIsCarried() {
        var message = liveActivity(.start)
        message.content = [:]
        message.title = nil
        message.liveActivity?.dismissalDate = nil
        message.liveActivity?.staleDate = 1_800
        #expect(apns(message)["aps"] == [
            "timestamp": 1_700, "event": "start", "content-state": ["eta": 12], "attributes-type": "OrderAttributes",
            "attributes": ["order": "7"], "stale-date": 1_800,
        ])
    }

    @Test func aLiveActivityMayGoAtPriorityFiveWithItsTTL() {
        var message = liveActivity(.update)
        message.liveActivity?.priority = 5
        message.ios.ttl = 60
        #expect(PayloadBuilder.apnsHeaders(message, now: 1_000)
            == .init(pushType: "liveactivity", priority: 5, expiration: 1_060, collapseID: nil, topicSuffix: ".push-type.liveactivity"))
    }

    @Test func aStoredLiveActivityReadsBackAndOlderStoredMessagesHaveNone() throws {
        let message = liveActivity(.start)
        #expect(try MessageSpec(storedText: message.storedText()) == message)
        #expect(try MessageSpec(storedText: spec().storedText()).liveActivity == nil)
    }

    // MARK: FCM

    @Test func fcmIsDataOnlyWithStringValues() throws {
        var message = spec(["en": "Body"])
        message.title = ["en": "Title"]
        message.data = ["n": 1]
        message.link = "app://x"
        message.richMedia = "RM"
        message.richMediaLink = RichMediaLink(url: "https://h/rich-media/A/RM.zip", ts: "7")
        message.android.sound = "beep"
        message.android.priority = 2
        message.android.icon = "ic"
        message.android.customIcon = "https://i/c.png"
        message.android.banner = "https://i/b.png"
        message.android.badges = .add(1)
        message.android.vibration = false
        message.android.led = "#FF0000"
        message.android.iconBackgroundColor = "#00FF00"
        message.android.rootParams = ["extra": ["a": 1], "flag": true, "plain": "text", "p": "nope"]
        let body = PayloadBuilder.fcm(message, hash: "h1", token: "tok", language: "en", badge: 0)
        let fcmMessage = try #require(body["message"]?.objectValue)
        #expect(Set(fcmMessage.keys) == ["token", "data", "android"])
        #expect(fcmMessage["token"] == "tok")
        let data = try #require(fcmMessage["data"]?.objectValue)
        #expect(data.values.allSatisfy { $0.stringValue != nil })
        #expect(data["pw_msg"] == "1")
        #expect(data["p"] == "h1")
        #expect(data["title"] == "Body")
        #expect(data["header"] == "Title")
        #expect(try JSON.parse(try #require(data["u"]?.stringValue)) == ["n": 1])
        #expect(data["l"] == "app://x")
        #expect(try JSON.parse(try #require(data["rm"]?.stringValue)) == ["url": "https://h/rich-media/A/RM.zip", "ts": "7", "tags": [:]])
        #expect(data["s"] == "beep")
        #expect(data["pri"] == "2")
        #expect(data["i"] == "ic")
        #expect(data["ci"] == "https://i/c.png")
        #expect(data["b"] == "https://i/b.png")
        #expect(data["pw_badges"] == "+1")
        #expect(data["vib"] == "0")
        #expect(data["led"] == "#FF0000")
        #expect(data["ibc"] == "#00FF00")
        #expect(data["silent"] == nil)
        #expect(data["extra"] == #"{"a":1}"#)
        #expect(data["flag"] == "true")
        #expect(data["plain"] == "text")
        #expect(fcmMessage["android"] == ["priority": "HIGH"])
    }

    @Test func androidTextsOverrideAndHeaderIsOmittedWithoutTitle() {
        var message = spec(["default": "Generic"])
        #expect(fcmData(message)["header"] == nil)
        #expect(fcmData(message)["title"] == "Generic")
        message.title = ["default": "T"]
        message.android.header = ["default": "Android header"]
        message.android.content = ["default": "Android body"]
        let data = fcmData(message)
        #expect(data["title"] == "Android body")
        #expect(data["header"] == "Android header")
    }

    @Test(arguments: [(nil, "HIGH"), (2, "HIGH"), (1, "HIGH"), (0, "NORMAL"), (-2, "NORMAL")] as [(Int?, String)])
    func priorityMapping(_ priority: Int?, _ expected: String) {
        var message = spec()
        message.android.priority = priority
        let android = PayloadBuilder.fcm(message, hash: "h", token: "t", language: nil, badge: 0)["message"]?["android"]
        #expect(android?["priority"] == .string(expected))
    }

    @Test func fcmBodiesAreTheEncodedMessageForEveryToken() {
        var message = spec(["default": "Hello", "de": "Hallo \"Welt\""])
        message.title = ["default": "Sale"]
        message.android.ttl = 60
        message.android.rootParams = ["extra": ["a": 1]]
        message.inbox = MessageSpec.InboxOptions(days: 3)
        let link = PayloadBuilder.InboxLink(message, code: "AB12-00000001-00000002", sentAt: 1_800_000_000)
        for language in [nil, "de", "fr"] as [String?] {
            let bodies = PayloadBuilder.FCMBodies(message, hash: "h1", language: language, inbox: link)
            for token in ["tok", "", "fcm:APA91b-é_\"\\x", String(repeating: "t", count: 300)] {
                let expected = PayloadBuilder.fcm(message, hash: "h1", token: token, language: language, badge: 0, inbox: link).encoded()
                #expect(bodies.body(token: token) == expected, "language \(language ?? "nil"), token \(token)")
            }
        }
    }

    @Test func androidTTLAndSilent() {
        var message = spec()
        message.android.ttl = 3600
        message.android.silent = true
        let body = PayloadBuilder.fcm(message, hash: "h", token: "t", language: nil, badge: 0)
        #expect(body["message"]?["android"]?["ttl"] == "3600s")
        #expect(body["message"]?["data"]?["silent"] == "1")
    }

    // MARK: Size check

    @Test func sizeCheckPassesNormalMessages() {
        var message = spec(["en": "Hi", "de": String(repeating: "ü", count: 1_500)])
        message.data = ["k": "v"]
        #expect(PayloadBuilder.sizeCheck(message) == nil)
    }

    @Test func sizeCheckCountsBytesNotCharacters() throws {
        // 1400 three-byte characters: 1400 characters, 4200 bytes.
        let message = spec(["en": "short", "ja": String(repeating: "語", count: 1_400)])
        let error = try #require(PayloadBuilder.sizeCheck(message))
        #expect(error.hasPrefix("payload of "))
        #expect(error.contains("exceeds the APNs limit of 4096 bytes (language \"ja\")"))
    }

    @Test func sizeCheckFindsOversizedIOSOnlyText() throws {
        var message = spec(["en": "short"])
        message.ios.content = ["en": "short", "fr": String(repeating: "é", count: 2_100)]
        let error = try #require(PayloadBuilder.sizeCheck(message))
        #expect(error.contains("APNs"))
        #expect(error.contains("(language \"fr\")"))
    }

    @Test func sizeCheckChecksTheFCMDataMap() throws {
        var message = spec(["en": "short"])
        message.platforms = [3]
        message.android.rootParams = ["big": .string(String(repeating: "x", count: 4_100))]
        let error = try #require(PayloadBuilder.sizeCheck(message))
        #expect(error.hasPrefix("FCM data of "))
        message.platforms = [1]
        #expect(PayloadBuilder.sizeCheck(message) == nil)
    }
}
