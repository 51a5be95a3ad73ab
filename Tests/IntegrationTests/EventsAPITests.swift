import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `GET /api/v1/apps/<code>/events`: what a product team reads back from the SDKs' reports.
@Suite(.serialized) struct EventsAPITests {
    let herald: HeraldProcesses
    static let app = HeraldProcesses.appCode
    /// 2026-03-02 00:00 UTC.
    static let day: Int64 = 1_772_409_600

    init() throws {
        herald = try HeraldProcesses()
        try herald.startIngest()
    }

    func post(_ hwid: String, ios: Bool, _ event: String, _ attributes: [String: JSON], at time: Int64) throws {
        try herald.ok("postEvent", [
            "application": .string(Self.app), "hwid": .string(hwid), "device_type": ios ? 1 : 3, "event": .string(event),
            "attributes": .object(attributes), "timestampUTC": .int(time), "timestampCurrent": .int(time + 3600),
        ])
    }

    func stats(from: Int64, to: Int64, token: String = "shop-secret") throws -> (Int, JSON) {
        let response = try herald.client.request("GET", "/api/v1/apps/\(Self.app)/events?from=\(from)&to=\(to)",
                                                 headers: [("Authorization", "Token \(token)")])
        return (response.status, try JSON.parse(response.body))
    }

    @Test func countsEventsScreensSessionsAndPurchasesInTheWindow() throws {
        let t = Self.day + 3600
        // iOS sends numbers as strings, Android as numbers.
        try post("ios-1", ios: true, "PW_ScreenOpen", ["screen_name": "Home", "device_type": "1"], at: t)
        try post("ios-1", ios: true, "PW_ScreenOpen", ["screen_name": "Cart", "device_type": "1"], at: t + 10)
        try post("and-1", ios: false, "PW_ScreenOpen", ["screen_name": "Home", "device_type": 3], at: t + 20)
        try post("and-2", ios: false, "PW_ScreenOpen", ["screen_name": "Home", "device_type": 3], at: t + 86_400)
        try post("ios-1", ios: true, "PW_UserIdle", ["idle_seconds": "30", "session_duration": "100", "screen_name": "Cart"], at: t + 30)
        try post("and-1", ios: false, "PW_ApplicationExit", ["session_duration": 200, "exit_intent_seconds": 5], at: t + 40)
        try post("ios-1", ios: true, "PW_InAppPurchase", ["productIdentifier": "gold", "quantity": 1, "__amount": 4.99, "__currency": "EUR"], at: t + 50)
        try post("and-1", ios: false, "PW_InAppPurchase", ["productIdentifier": "gold", "quantity": 1, "amount": "5.01", "currency": "EUR"], at: t + 60)
        try post("and-1", ios: false, "Checkout", ["total": 12], at: t + 70)
        try post("and-1", ios: false, "Checkout", ["total": 15], at: t + 80)
        try post("ios-9", ios: true, "Checkout", ["total": "1"], at: Self.day - 1)  // before the window

        let (status, body) = try stats(from: Self.day, to: Self.day + 2 * 86_400)
        #expect(status == 200)
        let events = Dictionary(uniqueKeysWithValues: (body["events"]?.arrayValue ?? []).map {
            ($0["name"]?.stringValue ?? "", ($0["count"]?.lenientInt ?? -1, $0["devices"]?.lenientInt ?? -1))
        })
        #expect(events["PW_ScreenOpen"]! == (4, 3))
        #expect(events["Checkout"]! == (2, 1))
        #expect(events["PW_InAppPurchase"]! == (2, 2))
        #expect(events["PW_UserIdle"]! == (1, 1) && events["PW_ApplicationExit"]! == (1, 1))
        #expect(body["screens"] == [["screen_name": "Home", "count": 3], ["screen_name": "Cart", "count": 1]])
        #expect(body["sessions"]?["count"] == 2)
        #expect(body["sessions"]?["average_duration_seconds"]?.lenientDouble == 150)
        #expect(body["sessions"]?["average_idle_seconds"]?.lenientDouble == 30)
        #expect(body["purchases"]?["count"] == 2)
        #expect(body["purchases"]?["revenue"]?["EUR"]?.lenientDouble == 10.0)
        #expect(body["days"] == [["day": "2026-03-02", "events": 9, "devices": 2], ["day": "2026-03-03", "events": 1, "devices": 1]])

        // A narrower window, and the counts survive kill -9 of ingest (they were committed before the reply).
        herald.stopIngest(signal: SIGKILL)
        try herald.startIngest()
        let (_, firstHour) = try stats(from: t, to: t + 25)
        #expect(firstHour["events"] == [["name": "PW_ScreenOpen", "count": 3, "devices": 2]])
    }

    @Test func askingWronglyGetsAClearError() throws {
        #expect(try stats(from: 0, to: 10, token: "news-secret").0 == 403)
        #expect(try stats(from: 10, to: 0).0 == 400)
        let bad = try herald.client.request("GET", "/api/v1/apps/\(Self.app)/events?from=yesterday",
                                            headers: [("Authorization", "Token shop-secret")])
        #expect(bad.status == 400)
        // Out of range: refused, and ingest still answers.
        #expect(try stats(from: 9_223_372_036_854_775_000, to: 9_223_372_036_854_775_807).0 == 400)
        #expect(try stats(from: -9_223_372_036_854_775_807, to: 0).0 == 400)
        let unknown = try herald.client.request("GET", "/api/v1/apps/NOPE/events", headers: [("Authorization", "Token shop-secret")])
        #expect(unknown.status == 404)
        let (status, empty) = try stats(from: 0, to: 10)
        #expect(status == 200 && empty["events"] == [] && empty["days"] == [])
    }
}
