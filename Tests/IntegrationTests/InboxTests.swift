import Foundation
import Testing
import Core
import SDKClient
import TestSupport

/// The message inbox against the real herald-ingest and herald-worker: campaigns with inbox options
/// leave their messages in the recipients' inboxes, which the SDK calls page through, mark and
/// delete, per device and per user; expired messages disappear.
@Suite(.serialized) struct InboxTests {
    static let app = HeraldProcesses.appCode

    static func inbox(_ herald: HeraldProcesses, _ hwid: String, lastCode: String = "", count: Int64 = 0) throws -> JSON {
        try herald.ok("getInboxMessages", [
            "application": .string(app), "hwid": .string(hwid), "userId": .string(hwid), "last_code": .string(lastCode),
            "count": .int(count), "last_request_time": 0,
        ])
    }

    static func mark(_ herald: HeraldProcesses, _ hwid: String, _ message: JSON, status: Int64) throws -> (status: Int, body: JSON) {
        try herald.call("inboxStatus", [
            "application": .string(app), "hwid": .string(hwid), "inbox_code": message["order"] ?? .null, "status": .int(status),
            "hash": message["hash"] ?? .null, "time": message["send_date"] ?? .null,
        ])
    }

    static func codes(_ reply: JSON) -> [String] { reply["messages"]?.arrayValue?.compactMap { $0["inbox_id"]?.stringValue } ?? [] }

    func hash(_ herald: HeraldProcesses, _ code: String) throws -> String {
        try #require(try herald.query("SELECT hash FROM messages WHERE code = '\(code)'", columns: 1).first?.first ?? nil)
    }

    @Test(arguments: TestDatabase.tested) func campaignMessagesArePagedMarkedReadAndDeletedPerDeviceAndPerUser(_ database: TestDatabase) throws {
        let herald = try HeraldProcesses(database: database)
        try herald.startIngest()
        try herald.register(SDKDevice("ib-de", platform: 1, token: "ab01", language: "de"))
        try herald.register(SDKDevice("ib-en", platform: 3, token: "fcm-en", language: "en"))
        try herald.register(SDKDevice("ib-phone", platform: 1, token: "ab03", userID: "u1"))
        try herald.register(SDKDevice("ib-tablet", platform: 3, token: "fcm-tablet", userID: "u1"))
        try herald.startWorker()
        try herald.waitForWorkers(1)

        // Bad options are refused naming the field, and create nothing.
        for (field, value, problem) in [
            ("inbox_days", JSON.int(31), "notifications[0].inbox_days: must be between 1 and 30"),
            ("inbox_date", "next week", "notifications[0].inbox_date: must be \"YYYY-MM-DD\""),
            ("inbox_date", "2001-01-01", "notifications[0].inbox_date: 2001-01-01 is not after the message's send date"),
            ("inbox_image", "ftp://img", "notifications[0].inbox_image: must be an http(s) URL"),
        ] {
            let (_, body) = try herald.createMessage([["send_date": "now", "content": "x", field: value]])
            #expect(body["status_code"] == 210)
            #expect(body["status_message"]?.stringValue?.hasPrefix(problem) == true, "\(body.text)")
        }
        #expect(try herald.messageCount() == 0)
        // Inbox calls for a device Herald does not know are refused and store nothing.
        let reports = try herald.count("SELECT count(*) FROM reports")
        for (method, extra) in [("getInboxMessages", [String: JSON]()), ("inboxStatus", ["inbox_code": "1", "status": 2])] {
            let (_, body) = try herald.call(method, .object(["application": .string(Self.app), "hwid": "nobody"].merging(extra) { $1 }))
            #expect(body["status_code"] == 210)
            #expect(body["status_message"]?.stringValue?.contains("hwid \"nobody\" is no device of application") == true, "\(body.text)")
        }
        #expect(try herald.count("SELECT count(*) FROM reports") == reports)

        let before = Int64(Date().timeIntervalSince1970)
        let sale = try herald.send(["send_date": "now", "content": ["en": "Sale today", "de": "Heute Angebote"], "title": "Sale",
                                    "link": "https://shop.example/sale", "inbox_image": "https://shop.example/sale.png", "inbox_days": 7])
        try herald.waitForMessage(sale)
        let cart = try herald.send(["send_date": "now", "content": "Your cart", "link": "shop://cart", "inbox_date": "2099-01-01"])
        try herald.waitForMessage(cart)
        try herald.waitForMessage(try herald.send(["send_date": "now", "content": "Push only"]))
        let after = Int64(Date().timeIntervalSince1970)

        let all = try Self.inbox(herald, "ib-de")
        #expect(Self.codes(all) == [cart, sale], "\(all.text)")
        #expect(all["new_inbox"] == 2 && all["next"] == "" && all["deleted"] == [])
        let first = try #require(all["messages"]?.arrayValue?.last)
        #expect(Set(first.objectValue?.keys.map { $0 } ?? []) ==
                ["inbox_id", "order", "rt", "send_date", "title", "text", "image", "action_type", "action_params", "status", "hash"])
        let sent = try #require(first["send_date"]?.stringValue.flatMap { Int64($0) })
        #expect((before...after).contains(sent))
        #expect(first["rt"] == .string(String(sent + 7 * 86_400)))
        #expect(first["order"]?.stringValue.flatMap { Int64($0) } != nil)
        #expect(first["title"] == "Sale" && first["text"] == "Heute Angebote" && first["image"] == "https://shop.example/sale.png")
        // The SDKs' types (2 URL, 3 deep link) and the parameters as JSON text, as they parse them.
        #expect(first["action_type"] == 2 && first["action_params"] == #"{"l":"https://shop.example/sale"}"#)
        let saleHash = try hash(herald, sale)
        #expect(first["status"] == 1 && first["hash"] == .string(saleHash))
        let second = try #require(all["messages"]?.arrayValue?.first)
        let endOfDate = try #require(TagDate.parse("2099-01-02"))
        #expect(second["rt"] == .string(String(endOfDate)), "kept through inbox_date")
        #expect(second["action_type"] == 3 && second["action_params"] == #"{"l":"shop://cart"}"# && second["title"] == "")
        #expect(second["image"] == nil && second["text"] == "Your cart")
        #expect(try Self.inbox(herald, "ib-en")["messages"]?.arrayValue?.last?["text"] == "Sale today")
        // The pushes tell the SDK the inbox id and expiry (the copy's expiry is fixed when its push is
        // recorded, a moment after the payload is built); a push-only message carries neither.
        let salePushes = try herald.sink(sale)
        let iosPush = try #require(salePushes.first { $0["hwid"] == "ib-de" }?["payload"])
        #expect(iosPush["pw_inbox"] == .string(sale))
        let iosExpiry = try #require(iosPush["inbox_params"]?["rt"]?.stringValue.flatMap { Int64($0) })
        #expect((sent + 7 * 86_400 - 60...sent + 7 * 86_400).contains(iosExpiry))
        #expect(iosPush["inbox_params"]?["image"] == "https://shop.example/sale.png")
        let androidData = try #require(salePushes.first { $0["hwid"] == "ib-en" }?["payload"]?["message"]?["data"])
        #expect(androidData["pw_inbox"] == .string(sale))
        #expect(try JSON.parse(try #require(androidData["inbox_params"]?.stringValue))["image"] == "https://shop.example/sale.png")
        #expect(try herald.sink(cart).first { $0["hwid"] == "ib-de" }?["payload"]?["inbox_params"] == ["rt": .string(String(endOfDate))])
        #expect(try herald.sinkLines().filter { $0["payload"]?["pw_inbox"] == nil && $0["payload"]?["message"]?["data"]?["pw_inbox"] == nil }
            .count == 4, "the push-only message's four pushes")

        // Paging, one message at a time.
        let page1 = try Self.inbox(herald, "ib-de", count: 1)
        #expect(Self.codes(page1) == [cart] && page1["next"] == second["order"])
        let page2 = try Self.inbox(herald, "ib-de", lastCode: try #require(page1["next"]?.stringValue), count: 1)
        #expect(Self.codes(page2) == [sale] && page2["next"] == "")

        // Read lowers new_inbox; deleted leaves the inbox; other devices are not affected.
        #expect(try Self.mark(herald, "ib-de", first, status: 2).body["status_code"] == 200)
        var now = try Self.inbox(herald, "ib-de")
        #expect(now["new_inbox"] == 1 && now["messages"]?.arrayValue?.last?["status"] == 2)
        #expect(try Self.mark(herald, "ib-de", second, status: 4).body["status_code"] == 200)
        now = try Self.inbox(herald, "ib-de")
        #expect(Self.codes(now) == [sale] && now["new_inbox"] == 0)
        #expect(try Self.inbox(herald, "ib-en")["new_inbox"] == 2)
        let (_, unknown) = try Self.mark(herald, "ib-de", ["order": "999999"], status: 2)
        #expect(unknown["status_code"] == 210 && unknown["status_message"]?.stringValue?.contains("inbox_code 999999") == true)
        let (_, badStatus) = try Self.mark(herald, "ib-de", first, status: 7)
        #expect(badStatus["status_code"] == 210 && badStatus["status_message"]?.stringValue?.hasPrefix("status must be 2") == true)

        // A user's devices share one inbox: each message once, marked on one device, read on both.
        let tabletOnly = try herald.send(["send_date": "now", "content": "For the tablet", "devices": ["ib-tablet"], "inbox_days": 1])
        try herald.waitForMessage(tabletOnly)
        let phone = try Self.inbox(herald, "ib-phone")
        #expect(Self.codes(phone) == [tabletOnly, cart, sale] && phone["new_inbox"] == 3)
        let shared = try #require(phone["messages"]?.arrayValue?.first)
        #expect(try Self.mark(herald, "ib-tablet", shared, status: 3).body["status_code"] == 200)
        let again = try Self.inbox(herald, "ib-phone")
        #expect(again["messages"]?.arrayValue?.first?["status"] == 3 && again["new_inbox"] == 2)
        #expect(Self.codes(try Self.inbox(herald, "ib-en")) == [cart, sale], "not the user's")
    }

    @Test func aMessagePastItsInboxDateDisappearsAndRetentionDeletesIt() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.register(SDKDevice("ib-x", platform: 1, token: "ab09"))
        try herald.startWorker()
        try herald.waitForWorkers(1)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let inboxDate = formatter.string(from: Date().addingTimeInterval(3))
        let expiry = try #require(formatter.date(from: inboxDate))
        let code = try herald.send(["send_date": "now", "content": "Soon gone", "inbox_date": .string(inboxDate)])
        try herald.waitForMessage(code)
        let shown = try Self.inbox(herald, "ib-x")
        #expect(Self.codes(shown) == [code], "\(shown.text)")
        #expect(shown["messages"]?.arrayValue?.first?["rt"] == .string(String(Int64(expiry.timeIntervalSince1970))), "inbox_date \(inboxDate): \(shown.text)")

        // Bounded: the expiry is 3 s away; poll every 200 ms for at most 6 s.
        let deadline = Date().addingTimeInterval(6)
        var last = shown
        while Date() < deadline, !Self.codes(last).isEmpty {
            usleep(200_000)
            last = try Self.inbox(herald, "ib-x")
        }
        #expect(Self.codes(last).isEmpty && last["new_inbox"] == 0, "\(last.text)")
        let live = "SELECT count(*) FROM messages WHERE inbox_until IS NOT NULL"
        #expect(try herald.count(live) == 1, "kept until retention runs")
        // A dispatcher prunes when it starts: the message's inbox is over.
        herald.stopIngest()
        try herald.startIngest()
        let pruned = Date().addingTimeInterval(5)
        while Date() < pruned, try herald.count(live) > 0 { usleep(100_000) }
        #expect(try herald.count(live) == 0)
    }
}
