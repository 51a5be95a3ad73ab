import Foundation
import Testing
import Core
import TestSupport

/// What `getResults` reads, per minute, on every backend: a message's sends, first deliveries and
/// first opens, and an application's installs, registrations, opens and unregistrations.
@Suite struct ActivityTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    func register(_ devices: any DeviceStore, _ hwid: String, at now: Int64) throws {
        try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "tok-\(hwid)", gateway: nil,
                                                      attributes: DeviceAttributes(platform: 1), tags: []), now: now)
    }

    @Test(arguments: Backend.allCases) func aMessagesSendsAndItsDevicesFirstDeliveriesAndOpensPerMinute(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        for hwid in ["H0", "H1", "H2"] { try register(stores.devices, hwid, at: 10) }
        var spec = MessageSpec(content: ["default": "Hi"])
        spec.schedule = MessageSpec.Schedule(sendAt: 1_000, perDeviceTimezone: false)
        let code = try #require(try stores.campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: 1_000).first)
        #expect(try stores.campaigns.messageActivity(code: code).isEmpty)
        #expect(try stores.campaigns.activateDueMessages(now: 1_000, shardSize: 20_000) == 1)
        let shard = try #require(try stores.campaigns.leaseShards(worker: "w", count: 1, now: 1_000, leaseUntil: 1_100).first)
        let work = try #require(try stores.campaigns.claimShard(shard, worker: "w", leaseUntil: 1_100, now: 1_000))
        let targets = try stores.campaigns.targets(of: work, after: work.firstDevice - 1, limit: 10)
        #expect(targets.count == 3)
        let outcomes = targets.map { DeliveryRecord(deviceID: $0.deviceID, outcome: $0.hwid == "H2" ? .failed : .sent, reason: "BadDeviceToken") }
        #expect(try stores.campaigns.record(outcomes, work: work, worker: "w", leaseUntil: 1_100, now: 1_065, attemptedThrough: nil))
        func report(_ kind: SDKReport.Kind, _ hwid: String, at time: Int64) -> SDKReport {
            SDKReport(kind: kind, app: "APP-1", hwid: hwid, userID: nil, platform: 1, name: nil, hash: work.hash, body: [:],
                      timestampUTC: time, timestampCurrent: nil)
        }
        // H0's second delivery report and H1's second open count once each, at the first.
        try stores.devices.record([report(.delivery, "H0", at: 1_200), report(.delivery, "H0", at: 1_300), report(.pushStat, "H1", at: 1_250),
                                   report(.pushStat, "H1", at: 1_400), report(.delivery, "H1", at: 1_390)], now: 1_500)
        #expect(try stores.campaigns.messageActivity(code: code) == [
            ActivityCount(minute: 1_020, action: "send", count: 2),
            ActivityCount(minute: 1_200, action: "delivery", count: 1),
            ActivityCount(minute: 1_200, action: "open", count: 1),
            ActivityCount(minute: 1_380, action: "delivery", count: 1),
        ])
        #expect(try stores.campaigns.messageActivity(code: "0000-00000000-00000000").isEmpty)
    }

    @Test(arguments: Backend.allCases) func anApplicationsInstallsRegistrationsOpensAndUnregistrationsPerMinute(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        try register(stores.devices, "H0", at: 100)
        try register(stores.devices, "H1", at: 110)
        try register(stores.devices, "H2", at: 200)
        try stores.devices.applicationOpen(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), now: 250)
        try stores.devices.unregisterDevice(app: "APP-1", hwid: "H2", now: 400)
        #expect(try stores.analytics.applicationActivity(app: "APP-1", from: 0, to: 1_000) == [
            ActivityCount(minute: 60, action: "install", count: 2),
            ActivityCount(minute: 60, action: "register", count: 2),
            ActivityCount(minute: 180, action: "install", count: 1),
            ActivityCount(minute: 240, action: "open", count: 1),
            ActivityCount(minute: 360, action: "unregister", count: 1),
        ])
        // The period is [from, to).
        #expect(try stores.analytics.applicationActivity(app: "APP-1", from: 110, to: 400) == [
            ActivityCount(minute: 60, action: "install", count: 1),
            ActivityCount(minute: 60, action: "register", count: 1),
            ActivityCount(minute: 180, action: "install", count: 1),
            ActivityCount(minute: 240, action: "open", count: 1),
        ])
    }
}
