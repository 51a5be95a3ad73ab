import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// What the real `herald-ingest` and `herald-worker` make of a NUL character and of over-long keys,
/// alike on SQLite and PostgreSQL: a NUL is refused naming the field (never a 500, which the SDKs
/// retry forever), a list item over its cap is refused naming the tag, and a screen or currency
/// over its cap is counted under its first 256 bytes. Nothing refused is stored.
@Suite(.serialized) struct InputLimitsTests {
    let herald: HeraldProcesses
    static let app = HeraldProcesses.appCode
    /// Hexadecimal digits of a hash: PostgreSQL cannot compress them into an index entry.
    static let incompressible = (0..<200).map { String(UInt64($0 + 1) &* 0x9E37_79B9_7F4A_7C15, radix: 16) }.joined()

    init() throws {
        herald = try HeraldProcesses()
        try herald.startIngest()
    }

    func device(_ hwid: String, _ extra: [String: JSON] = [:]) -> JSON {
        var fields: [String: JSON] = ["application": .string(Self.app), "hwid": .string(hwid), "device_type": 3]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    /// A Device or Remote API call that must be refused with 210 and `message`.
    func refused(_ method: String, _ request: JSON, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (status, body) = try herald.call(method, request)
        #expect(status == 200 && body["status_code"] == 210, "\(method): \(body)", sourceLocation: sourceLocation)
        #expect(body["status_message"]?.stringValue == message, sourceLocation: sourceLocation)
    }

    func oneSignal(_ path: String, body: String, json: Bool = false) throws -> (status: Int, body: JSON) {
        let type = json ? "application/json" : "application/x-www-form-urlencoded"
        let response = try herald.client.request("POST", path, body: Array(body.utf8), headers: [("Content-Type", type)])
        return (response.status, try JSON.parse(response.body))
    }

    func bulkSetTags(_ devices: JSON) throws -> JSON {
        let body: JSON = ["application": .string(Self.app), "auth": "shop-secret", "create_missing_tags": true, "devices": devices]
        let response = try herald.client.request("POST", "/api/v2/audience/bulkSetTags", body: body.encoded())
        #expect(response.status == 200)
        return try JSON.parse(response.body)
    }

    @Test func aNULCharacterIsRefusedNamingTheFieldOnEveryAPIAndNothingIsStored() throws {
        try herald.ok("registerDevice", device("ok-1", ["push_token": "t-ok-1"]))
        try refused("registerDevice", device("h\u{0}z", ["push_token": "t-2"]), "hwid must not contain the NUL character (U+0000)")
        try refused("setTags", device("ok-1", ["tags": ["nm": "a\u{0}b"]]), "tags.nm must not contain the NUL character (U+0000)")
        try refused("setTags", device("ok-1", ["tags": ["a\u{0}b": 1]]), "the keys of tags must not contain the NUL character (U+0000)")
        try refused("setTags", device("ok-1", ["tags": ["interests": ["x", "y\u{0}"]]]),
                    "tags.interests[1] must not contain the NUL character (U+0000)")
        try refused("postEvent", device("ok-1", ["event": "Ev\u{0}il", "attributes": [:]]), "event must not contain the NUL character (U+0000)")
        try refused("postEvent", device("ok-1", ["event": "PW_ScreenOpen", "attributes": ["screen_name": "a\u{0}b"]]),
                    "attributes.screen_name must not contain the NUL character (U+0000)")
        try refused("createMessage", ["application": .string(Self.app), "auth": "shop-secret", "notifications": [["content": "Hi\u{0}"]]],
                    "notifications[0].content must not contain the NUL character (U+0000)")

        let form = try oneSignal("/onesignal/adddevice", body: "app_id=\(Self.app)&device_type=1&identifier=tok%00en&notification_types=1")
        #expect(form.status == 400 && form.body == ["status": 0, "message": "identifier must not contain the NUL character (U+0000)"])
        let formKey = try oneSignal("/onesignal/adddevice", body: "app_id=\(Self.app)&device_type=1&identifier=token&x%00=1")
        #expect(formKey.status == 400 && formKey.body["message"] == "a field name must not contain the NUL character (U+0000)")
        let tags = try oneSignal("/onesignal/editdevice", body: "app_id=\(Self.app)&device_type=1&player_id=ok-1&tags=%7B%22nm%22%3A%22a%5Cu0000b%22%7D")
        #expect(tags.status == 400 && tags.body["message"] == "tags.nm must not contain the NUL character (U+0000)")
        let json = try oneSignal("/onesignal/adddevice", body: #"{"app_id": "\#(Self.app)", "device_type": 1, "identifier": "t\u0000k"}"#, json: true)
        #expect(json.status == 400 && json.body["message"] == "identifier must not contain the NUL character (U+0000)")

        let inApp = try herald.client.request("PUT", "/api/v1/apps/\(Self.app)/in-apps/offer",
                                              body: Array(#"{"rich_media": "page", "triggers": [{"event": "Buy\u0000"}]}"#.utf8),
                                              headers: [("Authorization", "Token shop-secret")])
        let inAppError = try JSON.parse(inApp.body)["error"]
        #expect(inApp.status == 400 && inAppError == "in-app offer refused: triggers[0].event must not contain the NUL character (U+0000)")

        let bulk = try bulkSetTags([["hwid": "ok-1", "tags": ["nm": "a\u{0}b"]]])
        #expect(bulk["status_code"] == 210 && bulk["status_message"] == "devices[0].tags.nm must not contain the NUL character (U+0000)")

        // Nothing reached the database, and no request was taken for Herald's own failure.
        #expect(try herald.count("SELECT count(*) FROM devices") == 1)
        #expect(try herald.ok("getTags", device("ok-1")) == ["result": [:]])
        #expect(try herald.count("SELECT count(*) FROM reports") == 0)
        #expect(try herald.count("SELECT count(*) FROM messages") == 0)
        #expect(try herald.count("SELECT count(*) FROM bulk_tag_jobs") == 0)
        #expect(try herald.count("SELECT count(*) FROM in_apps") == 0)
        #expect(!herald.log().contains("ERROR"), "\(herald.log().suffix(1500))")
    }

    @Test func aListItemOverItsCapIsRefusedNamingTheTag() throws {
        let longest = String(repeating: "é", count: TagRules.maxListItemBytes / 2)
        try herald.ok("registerDevice", device("list-1", ["push_token": "t-list-1", "tags": ["interests": [.string(longest)]]]))
        let message = "tags.interests: list items must be at most 1024 bytes long"
        try refused("setTags", device("list-1", ["tags": ["interests": ["shoes", .string(Self.incompressible)]]]), message)
        try refused("setTags", device("list-1", ["tags": ["interests": ["operation": "append", "value": [.string(Self.incompressible)]]]]), message)
        try refused("registerDevice", device("list-2", ["push_token": "t-list-2", "tags": ["interests": [.string(longest + "x")]]]), message)
        let bulk = try bulkSetTags([["hwid": "list-1", "list_operator": "append", "tags": ["interests": [.string(Self.incompressible)]]]])
        #expect(bulk["status_code"] == 210 && bulk["status_message"] == "devices[0].tags.interests: list items must be at most 1024 bytes long")
        #expect(try herald.ok("getTags", device("list-1")) == ["result": ["interests": [.string(longest)]]])
        #expect(try herald.count("SELECT count(*) FROM devices WHERE hwid = 'list-2'") == 0)
    }

    /// The worker folds long screen names and currencies into the rollups under their first 256
    /// bytes (PostgreSQL's index could not hold them whole), and the statistics read them alike
    /// before and after.
    @Test func longScreensAndCurrenciesAreCountedUnderTheirFirst256Bytes() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let cut = String(Self.incompressible.prefix(ReportFact.maxKeyBytes))
        for (event, attributes): (String, [String: JSON]) in [
            ("PW_ScreenOpen", ["screen_name": .string(Self.incompressible + "a")]),
            ("PW_ScreenOpen", ["screen_name": .string(Self.incompressible + "b")]),
            ("PW_ScreenOpen", ["screen_name": "Home"]),
            ("PW_InAppPurchase", ["__currency": .string(Self.incompressible), "__amount": 2]),
        ] {
            try herald.ok("postEvent", device("screens-1", ["event": .string(event), "attributes": .object(attributes),
                                                            "timestampUTC": .int(now), "timestampCurrent": .int(now)]))
        }
        // A window of whole days reads the rollups once the reports are processed; a shorter one, the reports.
        let today = now - now % 86_400
        func expectCounts(_ comment: Comment) throws {
            for (from, to) in [(now - 60, now + 60), (today, today + 86_400)] {
                let response = try herald.client.request("GET", "/api/v1/apps/\(Self.app)/events?from=\(from)&to=\(to)",
                                                         headers: [("Authorization", "Token shop-secret")])
                let stats = try JSON.parse(response.body)
                #expect(stats["screens"] == [["screen_name": .string(cut), "count": 2], ["screen_name": "Home", "count": 1]], comment)
                #expect(stats["purchases"]?["revenue"]?[cut]?.lenientDouble == 2, comment)
            }
        }
        try expectCounts("raw")
        try herald.startWorker()
        try herald.waitForReportsProcessed(timeout: 30)
        #expect(try herald.count("SELECT count(*) FROM screen_days") == 2)
        try expectCounts("processed")
        let worker = try String(contentsOfFile: herald.workerLogPath(0), encoding: .utf8)
        #expect(!worker.contains("report batch failed"), "\(worker.suffix(1500))")
    }
}
