import Foundation
import Testing
import Core
import TestSupport

/// The device registry's contract, run against every backend.
@Suite struct DeviceStoreTests {
    @Test(arguments: Backend.allCases) func registerStoresTheDeviceAndItsTypedTags(_ backend: Backend) throws {
        try DeviceStoreContract(backend).registerStoresTheDeviceAndItsTypedTags()
    }

    @Test(arguments: Backend.allCases) func appsAreSeparate(_ backend: Backend) throws {
        try DeviceStoreContract(backend).appsAreSeparate()
    }

    @Test(arguments: Backend.allCases) func aRejectedSetTagsChangesNothing(_ backend: Backend) throws {
        try DeviceStoreContract(backend).aRejectedSetTagsChangesNothing()
    }

    @Test(arguments: Backend.allCases) func operationsAndDeletes(_ backend: Backend) throws {
        try DeviceStoreContract(backend).operationsAndDeletes()
    }

    @Test(arguments: Backend.allCases) func theTypeOfATagIsFixedByItsFirstValue(_ backend: Backend) throws {
        try DeviceStoreContract(backend).theTypeOfATagIsFixedByItsFirstValue()
    }

    @Test(arguments: Backend.allCases) func setTagsOnAnUnknownDeviceNeedsItsPlatform(_ backend: Backend) throws {
        try DeviceStoreContract(backend).setTagsOnAnUnknownDeviceNeedsItsPlatform()
    }

    @Test(arguments: Backend.allCases) func unregisterClearsTheTokenButKeepsTheDevice(_ backend: Backend) throws {
        try DeviceStoreContract(backend).unregisterClearsTheTokenButKeepsTheDevice()
    }

    @Test(arguments: Backend.allCases) func usersBadgesAndMerges(_ backend: Backend) throws {
        try DeviceStoreContract(backend).usersBadgesAndMerges()
    }

    @Test(arguments: Backend.allCases) func registerByTokenReturnsTheSameDeviceForTheSameToken(_ backend: Backend) throws {
        try DeviceStoreContract(backend).registerByTokenReturnsTheSameDeviceForTheSameToken()
    }

    @Test(arguments: Backend.allCases) func reportsAreKeptAsReceived(_ backend: Backend) throws {
        try DeviceStoreContract(backend).reportsAreKeptAsReceived()
    }

    @Test(arguments: Backend.allCases) func declaredVersionTagsCompareAsVersions(_ backend: Backend) throws {
        try DeviceStoreContract(backend).declaredVersionTagsCompareAsVersions()
    }

    @Test(arguments: Backend.allCases) func reopeningMigratesOnceAndKeepsData(_ backend: Backend) throws {
        try DeviceStoreContract(backend).reopeningMigratesOnceAndKeepsData()
    }
}

/// The bodies of `DeviceStoreTests`, on a fresh database of one backend.
struct DeviceStoreContract {
    let fixture: StoreFixture
    let store: any DeviceStore
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s"),
                       AppConfiguration(code: "APP-2", name: "Two", apiToken: "u", sink: "s")]

    init(_ backend: Backend) throws {
        fixture = try StoreFixture(backend)
        store = try fixture.devices(apps: Self.apps)
    }

    func register(_ hwid: String, app: String = "APP-1", token: String = "tok", tags: [String: JSON] = [:]) throws {
        try store.registerDevice(
            DeviceRegistration(app: app, hwid: hwid, pushToken: token, gateway: "sandbox",
                               attributes: DeviceAttributes(platform: 1, language: "fr", timezoneOffset: 3600),
                               tags: try TagUpdate.parse(tags)), now: 100)
    }

    func registerStoresTheDeviceAndItsTypedTags() throws {
        try register("H1", tags: ["Level": 3, "City": "Lyon", "Fav": ["a", "b"], "Born": "2000-01-02 03:04", "VIP": true, "Score": 1.5])
        let device = try #require(try store.device(app: "APP-1", hwid: "H1"))
        #expect(device.pushToken == "tok" && device.gateway == "sandbox" && device.platform == 1)
        #expect(device.language == "fr" && device.timezoneOffset == 3600 && device.subscribed)
        let tags = try store.getTags(app: "APP-1", hwid: "H1", userID: nil)
        #expect(tags == ["Level": .integer(3), "City": .string("Lyon"), "Fav": .list(["a", "b"]),
                         "Born": .date(946_782_240), "VIP": .boolean(true), "Score": .decimal(1.5)])
    }

    func appsAreSeparate() throws {
        try register("H1", tags: ["Level": 3])
        #expect(try store.getTags(app: "APP-2", hwid: "H1", userID: nil).isEmpty)
        #expect(throws: StoreError.self) { try store.getTags(app: "NOPE", hwid: "H1", userID: nil) }
    }

    func aRejectedSetTagsChangesNothing() throws {
        try register("H1", tags: ["Level": 3, "City": "Lyon"])
        #expect(throws: StoreError.self) {
            try store.setTags(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(language: "de"),
                              updates: try TagUpdate.parse(["City": "Paris", "Level": "high"]), now: 200)
        }
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil) == ["Level": .integer(3), "City": .string("Lyon")])
        #expect(try store.device(app: "APP-1", hwid: "H1")?.language == "fr")
    }

    func operationsAndDeletes() throws {
        try register("H1", tags: ["Level": 3, "Fav": ["a"], "City": "Lyon"])
        try store.setTags(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), updates: try TagUpdate.parse([
            "Level": ["operation": "increment", "value": 2], "Fav": ["operation": "append", "value": ["b"]], "City": nil,
        ]), now: 200)
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil) == ["Level": .integer(5), "Fav": .list(["a", "b"])])
    }

    func theTypeOfATagIsFixedByItsFirstValue() throws {
        try register("H1", tags: ["Level": 3])
        try register("H2", tags: ["Level": "7"])
        #expect(try store.getTags(app: "APP-1", hwid: "H2", userID: nil)["Level"] == .integer(7))
        #expect(throws: StoreError.self) { try register("H3", tags: ["Level": "seven"]) }
        #expect(try store.device(app: "APP-1", hwid: "H3") == nil)
    }

    func setTagsOnAnUnknownDeviceNeedsItsPlatform() throws {
        #expect(throws: StoreError.self) {
            try store.setTags(app: "APP-1", hwid: "NEW", attributes: DeviceAttributes(), updates: try TagUpdate.parse(["a": 1]), now: 1)
        }
        try store.setTags(app: "APP-1", hwid: "NEW", attributes: DeviceAttributes(platform: 3), updates: try TagUpdate.parse(["a": 1]), now: 1)
        #expect(try store.device(app: "APP-1", hwid: "NEW")?.pushToken == nil)
    }

    func unregisterClearsTheTokenButKeepsTheDevice() throws {
        try register("H1", tags: ["Level": 3])
        try store.unregisterDevice(app: "APP-1", hwid: "H1", now: 300)
        let device = try #require(try store.device(app: "APP-1", hwid: "H1"))
        #expect(device.pushToken == nil)
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil)["Level"] == .integer(3))
    }

    func usersBadgesAndMerges() throws {
        try register("H1")
        try store.registerUser(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), userID: "alice", now: 10)
        try store.setBadge(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), badge: 4, now: 11)
        #expect(try store.device(app: "APP-1", hwid: "H1")?.badge == 4)
        #expect(try store.getTags(app: "APP-1", hwid: nil, userID: "alice")["badge"] == .integer(4))
        try store.mergeUser(app: "APP-1", oldUserID: "alice", newUserID: "alice2", merge: true, now: 12)
        #expect(try store.device(app: "APP-1", hwid: "H1")?.userID == "alice2")
    }

    func registerByTokenReturnsTheSameDeviceForTheSameToken() throws {
        let first = try store.registerByToken(app: "APP-1", pushToken: "ab12", attributes: DeviceAttributes(platform: 1), newHWID: "p1", now: 1)
        let second = try store.registerByToken(app: "APP-1", pushToken: "ab12", attributes: DeviceAttributes(platform: 1), newHWID: "p2", now: 2)
        #expect(first == "p1" && second == "p1")
        try store.setSubscribed(app: "APP-1", hwid: "p1", subscribed: false, now: 3)
        #expect(try store.device(app: "APP-1", hwid: "p1")?.subscribed == false)
        #expect(throws: StoreError.self) { try store.setSubscribed(app: "APP-1", hwid: "nobody", subscribed: true, now: 3) }
    }

    func reportsAreKeptAsReceived() throws {
        let report = SDKReport(kind: .event, app: "APP-1", hwid: "H1", userID: "u", platform: 1, name: "PW_ScreenOpen", hash: nil,
                               body: ["attributes": ["screen_name": "Home"]], timestampUTC: 5, timestampCurrent: 3605)
        try store.record([report], now: 9)
        #expect(try store.reports(app: "APP-1", limit: 10) == [report])
    }

    func declaredVersionTagsCompareAsVersions() throws {
        var app = AppConfiguration(code: "APP-V", name: "V", apiToken: "t", sink: "s")
        app.tagTypes = ["AppVersion": .version]
        let other = try StoreFixture(fixture.backend)
        let declared = try other.devices(apps: [app])
        try declared.setTags(app: "APP-V", hwid: "V1", attributes: DeviceAttributes(platform: 1),
                             updates: try TagUpdate.parse(["AppVersion": "2.10.1"]), now: 1)
        #expect(try declared.getTags(app: "APP-V", hwid: "V1", userID: nil) == ["AppVersion": .version("2.10.1")])
        #expect(throws: StoreError.self) {
            try declared.setTags(app: "APP-V", hwid: "V1", attributes: DeviceAttributes(), updates: try TagUpdate.parse(["AppVersion": "two"]), now: 2)
        }
        app.tagTypes = ["AppVersion": .integer]
        #expect(throws: StoreError.self) {
            _ = try other.devices(apps: [app])
        }
    }

    func reopeningMigratesOnceAndKeepsData() throws {
        try register("H1", tags: ["Level": 3])
        let again = try fixture.devices(apps: Self.apps)
        #expect(try again.getTags(app: "APP-1", hwid: "H1", userID: nil)["Level"] == .integer(3))
    }
}
