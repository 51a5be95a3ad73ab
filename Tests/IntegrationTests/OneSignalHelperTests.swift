import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// The OneSignal helper's form-encoded contract, against the real `herald-ingest`.
@Suite(.serialized) struct OneSignalHelperTests {
    let herald: HeraldProcesses
    static let app = HeraldProcesses.appCode

    init() throws {
        herald = try HeraldProcesses()
        try herald.startIngest()
    }

    func form(_ path: String, _ fields: [(String, String)]) throws -> (status: Int, body: JSON) {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
        let response = try herald.client.request("POST", path, body: Array(body.utf8),
                                                 headers: [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")])
        return (response.status, try JSON.parse(response.body))
    }

    func base(_ extra: [(String, String)]) -> [(String, String)] {
        [("app_id", Self.app), ("device_type", "0"), ("game_version", "1.4"), ("device_model", "iPhone14,5"), ("device_os", "17.2")] + extra
    }

    func addDevice(_ token: String) throws -> String {
        let (status, body) = try form("/onesignal/adddevice", base([("identifier", token), ("notification_types", "1")]))
        #expect(status == 200)
        #expect(body["status"] == .int(1))
        return try #require(body["player_id"]?.stringValue)
    }

    @Test func addDeviceReturnsAStablePlayerIDThatPushwooshSees() throws {
        let player = try addDevice("0a0b0c0d0e0f")
        #expect(try addDevice("0a0b0c0d0e0f") == player)
        #expect(try addDevice("ffffeeee") != player)
        // The same record is visible to the Pushwoosh Device API.
        try herald.ok("setTags", ["application": .string(Self.app), "hwid": .string(player), "tags": ["Plan": "gold"]])
        let tags = try herald.ok("getTags", ["application": .string(Self.app), "hwid": .string(player)])
        #expect(tags == ["result": ["Plan": "gold"]])
    }

    @Test func editDeviceSetsTagsAndSubscription() throws {
        let player = try addDevice("1234abcd")
        let tagged = try form("/onesignal/editdevice", base([("player_id", player), ("notification_types", "1"),
                                                              ("tags", #"{"level":"7","team":"red"}"#)]))
        #expect(tagged.status == 200 && tagged.body["status"] == .int(1))
        #expect(try herald.ok("getTags", ["application": .string(Self.app), "hwid": .string(player)]) == ["result": ["level": "7", "team": "red"]])

        let unsubscribed = try form("/onesignal/editdevice", base([("player_id", player), ("notification_types", "-2")]))
        #expect(unsubscribed.body["status"] == .int(1))
        let store = try herald.stores().devices
        #expect(try store.device(app: Self.app, hwid: player)?.subscribed == false)
        #expect(try store.device(app: Self.app, hwid: player)?.platform == 1)

        _ = try form("/onesignal/editdevice", base([("player_id", player), ("notification_types", "1"), ("tags", "")]))
        #expect(try store.device(app: Self.app, hwid: player)?.subscribed == true)
    }

    @Test func jsonBodiesWorkToo() throws {
        let response = try herald.client.request(
            "POST", "/onesignal/adddevice",
            body: JSON.object(["app_id": .string(Self.app), "device_type": 1, "identifier": "fcm-token-1", "notification_types": 1]).encoded(),
            headers: [("Content-Type", "application/json")])
        #expect(response.status == 200)
        #expect(try JSON.parse(response.body)["player_id"]?.stringValue?.isEmpty == false)
    }

    @Test func errorsAre4xxWithStatus0() throws {
        let noApp = try form("/onesignal/adddevice", [("device_type", "0"), ("identifier", "x")])
        #expect(noApp.status == 400 && noApp.body["status"] == .int(0))
        #expect(noApp.body["message"]?.stringValue?.contains("app_id") == true)
        let wrongApp = try form("/onesignal/adddevice", [("app_id", "NOPE"), ("device_type", "0"), ("identifier", "x")])
        #expect(wrongApp.status == 400)
        let noToken = try form("/onesignal/adddevice", base([]))
        #expect(noToken.status == 400 && noToken.body["message"]?.stringValue?.contains("identifier") == true)
        let unknownPlayer = try form("/onesignal/editdevice", base([("player_id", "ghost"), ("notification_types", "1")]))
        #expect(unknownPlayer.status == 404 && unknownPlayer.body["status"] == .int(0))
        #expect(try herald.ok("getTags", ["application": .string(Self.app), "hwid": "ghost"]) == ["result": [:]])
        let badTags = try form("/onesignal/editdevice", base([("player_id", try addDevice("beef")), ("tags", "{not json")]))
        #expect(badTags.status == 400 && badTags.body["message"]?.stringValue?.contains("tags") == true)
    }
}
