import Testing
@testable import Ingest
import Core

/// createMessage's Web Push fields become `MessageSpec.web`; a wrong one is refused naming it.
@Suite struct NotificationParserWebTests {
    func parser(_ fields: [String: JSON]) -> NotificationParser {
        var all = fields
        all["content"] = "Hello"
        return NotificationParser(fields: all, path: "notifications[0]", tagTypes: [:], now: 1_800_000_000)
    }

    func parse(_ fields: [String: JSON]) throws -> MessageSpec { try parser(fields).parse() }

    func problem(_ fields: [String: JSON]) -> String? { parser(fields).refusal() }

    @Test func chromeAndWebFieldsAreRead() throws {
        #expect(try parse([:]).web == nil)
        let spec = try parse([
            "chrome_title": ["en": "Sale", "de": "Verkauf"], "chrome_icon": "https://shop.example/i.png",
            "chrome_image": "https://shop.example/b.png", "chrome_duration": 0,
            "chrome_button_text1": "Open", "chrome_button_url1": "https://shop.example/sale", "chrome_button_text2": "Later",
            "chrome_gcm_ttl": 600, "web_urgency": "low", "web_topic": "sale-1", "chrome_root_params": ["campaign": "spring"],
        ])
        var expected = MessageSpec.WebOptions()
        expected.title = ["en": "Sale", "de": "Verkauf"]
        expected.icon = "https://shop.example/i.png"
        expected.image = "https://shop.example/b.png"
        expected.duration = 0
        expected.buttons = [.init(title: "Open", url: "https://shop.example/sale"), .init(title: "Later", url: nil)]
        expected.ttl = 600
        expected.urgency = "low"
        expected.topic = "sale-1"
        expected.rootParams = ["campaign": "spring"]
        #expect(spec.web == expected)
        #expect(try parse(["web_ttl": 60, "chrome_gcm_ttl": 60]).web?.ttl == 60)
    }

    @Test func badFieldsAreNamed() {
        #expect(problem(["web_urgency": "urgent"]) == "notifications[0].web_urgency: must be very-low, low, normal, high")
        #expect(problem(["web_topic": .string(String(repeating: "t", count: 33))])?.hasPrefix("notifications[0].web_topic: must be at most 32") == true)
        #expect(problem(["web_topic": "a b"])?.hasPrefix("notifications[0].web_topic:") == true)
        #expect(problem(["web_ttl": -1]) == "notifications[0].web_ttl: must not be negative")
        #expect(problem(["web_ttl": 60, "chrome_gcm_ttl": 70])?.hasPrefix("notifications[0].web_ttl: differs") == true)
        #expect(problem(["chrome_button_url1": "https://x"]) == "notifications[0].chrome_button_url1: needs chrome_button_text1")
        #expect(problem(["chrome_duration": 4000])?.hasPrefix("notifications[0].chrome_duration:") == true)
    }
}
