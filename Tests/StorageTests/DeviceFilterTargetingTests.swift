import Foundation
import Testing
import Core
import TestSupport

/// `devices_filter` set operations resolved by each backend's target query: the devices a shard of
/// a targeted message pages through, for filters over devices whose platforms and tags are chosen here.
@Suite struct DeviceFilterTargetingTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t1", sink: "s"),
                       AppConfiguration(code: "APP-2", name: "Two", apiToken: "t2", sink: "s")]

    /// hwid → (platform, tags).
    static let devices: [(String, Int, [String: JSON])] = [
        ("D1", 1, ["City": "Paris", "Level": 5]),
        ("D2", 3, ["City": "Paris", "Level": 12]),
        ("D3", 1, ["City": "Lyon", "Level": 15, "VIP": true]),
        ("D4", 3, ["City": "Lyon", "VIP": false]),
        ("D5", 1, ["Level": 10, "VIP": true]),
        ("D6", 3, [:]),
    ]

    static let cases: [(String, Set<String>)] = [
        (#"A("APP-1")"#, ["D1", "D2", "D3", "D4", "D5", "D6"]),
        (#"A("APP-1", ["iOS"])"#, ["D1", "D3", "D5"]),
        (#"T("City", EQ, "Paris") + T("Level", GTE, 10)"#, ["D1", "D2", "D3", "D5"]),
        (#"T("City", EQ, "Paris") * T("Level", GTE, 10)"#, ["D2"]),
        (#"A("APP-1", ["iOS"]) * (T("City", EQ, "Paris") + T("Level", GTE, 10)) \ T("VIP", EQ, true)"#, ["D1"]),
        (#"((A("APP-1") \ T("City", ANY)) * T("VIP", NOTSET))"#, ["D6"]),
        (#"T("City", IN, ["Paris", "Lyon"]) * T("VIP", EQ, 0)"#, ["D4"]),
        (#"AT("APP-1", "Level", BETWEEN, [5, 12]) \ A("APP-1", ["ANDROID"])"#, ["D1", "D5"]),
        // A set of another application matches none of this one's devices.
        (#"AT("APP-2", "City", EQ, "Paris") + T("Level", LTE, 5)"#, ["D1"]),
        (#"AT("APP-2", "City", EQ, "Paris") * T("Level", LTE, 5)"#, []),
        (#"(T("City", ANY) * T("Level", GTE, 10)) * (T("VIP", EQ, true) + T("City", EQ, "Paris"))"#, ["D2", "D3"]),
        (#"A("APP-1", ["Android"]) \ A("APP-1", ["android"])"#, []),
        (#"T("VIP", EQ, "false") + (T("Level", NOTIN, [5, 10, 12]) * A("APP-1", ["IOS"]))"#, ["D3", "D4"]),
    ]

    @Test(arguments: Backend.allCases) func setOperationsSelectTheDevicesOfTheirSets(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        for (hwid, platform, tags) in Self.devices {
            try stores.devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "tok-\(hwid)", gateway: nil,
                                                                 attributes: DeviceAttributes(platform: platform), tags: try TagUpdate.parse(tags)),
                                              now: 10)
        }
        // The same hwids in the other application, which no message of APP-1 may reach.
        try stores.devices.registerDevice(DeviceRegistration(app: "APP-2", hwid: "D1", pushToken: "other", gateway: nil,
                                                             attributes: DeviceAttributes(platform: 1), tags: try TagUpdate.parse(["City": "Paris"])),
                                          now: 10)
        let types = try stores.campaigns.tagTypes(app: "APP-1")
        for (index, (text, expected)) in Self.cases.enumerated() {
            let now = Int64(1_000 + index * 100)
            var spec = MessageSpec(content: ["default": "Hi"])
            spec.schedule = MessageSpec.Schedule(sendAt: now, perDeviceTimezone: false)
            spec.filter = try DeviceFilterParser.parse(text).resolve(tagType: { types[$0] }, now: now)
            _ = try stores.campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: now)
            #expect(try stores.campaigns.activateDueMessages(now: now, shardSize: 20_000) == 1)
            var found: [String] = []
            for shard in try stores.campaigns.leaseShards(worker: "w", count: 100, now: now, leaseUntil: now + 30) {
                let work = try #require(try stores.campaigns.claimShard(shard, worker: "w", leaseUntil: now + 30, now: now))
                found += try stores.campaigns.targets(of: work, after: work.firstDevice - 1, limit: 100).map(\.hwid)
                _ = try stores.campaigns.finishShard(work, worker: "w", resumeAt: nil)
            }
            #expect(Set(found) == expected, "\(text)")
            #expect(found.count == Set(found).count, "\(text): \(found)")
        }
    }
}
