import Testing
import Core
import TestSupport

/// The opt-in history on every backend: one row per change of a device's permission state (not
/// per registration), counted per UTC day and app version; and campaigns that reach devices not
/// opted in only when the message is silent on their platform.
@Suite struct OptInTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
    static let day: Int64 = 86_400

    func register(_ devices: any DeviceStore, _ hwid: String, types: Int64?, version: String? = nil, at now: Int64) throws {
        try devices.registerDevice(DeviceRegistration(
            app: "APP-1", hwid: hwid, pushToken: "tok-\(hwid)", gateway: nil,
            attributes: DeviceAttributes(platform: 1, appVersion: version, notificationTypes: types), tags: []), now: now)
    }

    @Test(arguments: Backend.allCases) func permissionChangesAreCountedOncePerChangePerDayAndAppVersion(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        let day0 = 20 * Self.day, day1 = 21 * Self.day
        try register(stores.devices, "H0", types: 7, version: "1.0", at: day0 + 10)
        try register(stores.devices, "H0", types: 7, version: "1.0", at: day0 + 20)  // no change
        try register(stores.devices, "H0", types: 6, at: day0 + 30)  // still opted in
        try register(stores.devices, "H1", types: 0, version: "1.0", at: day0 + 40)
        try register(stores.devices, "H2", types: nil, at: day0 + 50)  // no mask: opted in
        try register(stores.devices, "H1", types: 7, version: "1.1", at: day1 + 10)
        try register(stores.devices, "H0", types: 0, at: day1 + 20)
        try stores.devices.unregisterDevice(app: "APP-1", hwid: "H1", now: day1 + 30)
        try stores.devices.setSubscribed(app: "APP-1", hwid: "H0", subscribed: false, now: day1 + 40)  // already out
        try stores.devices.setSubscribed(app: "APP-1", hwid: "H2", subscribed: false, now: day1 + 50)
        #expect(try fixture.count("SELECT count(*) FROM permission_changes") == 7)
        #expect(try stores.analytics.optIns(app: "APP-1", from: 0, to: 30 * Self.day) == [
            OptInCount(day: day0, appVersion: nil, registered: 1, optedIn: 1, optedOut: 0),
            OptInCount(day: day0, appVersion: "1.0", registered: 2, optedIn: 1, optedOut: 1),
            OptInCount(day: day1, appVersion: nil, registered: 0, optedIn: 0, optedOut: 1),
            OptInCount(day: day1, appVersion: "1.0", registered: 0, optedIn: 0, optedOut: 1),
            OptInCount(day: day1, appVersion: "1.1", registered: 0, optedIn: 1, optedOut: 1),
        ])
        // Versions list in byte order on both backends, whatever the PostgreSQL server's collation.
        for (index, version) in ["1.0-alpha", "1.0-Beta", "1.0-beta", "1.0-Alpha"].enumerated() {
            try register(stores.devices, "V\(index)", types: 7, version: version, at: 25 * Self.day)
        }
        #expect(try stores.analytics.optIns(app: "APP-1", from: 25 * Self.day, to: 26 * Self.day).map(\.appVersion)
                == ["1.0-Alpha", "1.0-Beta", "1.0-alpha", "1.0-beta"])
        // The window is [from, to).
        #expect(try stores.analytics.optIns(app: "APP-1", from: day0 + 40, to: day1 + 20) == [
            OptInCount(day: day0, appVersion: nil, registered: 1, optedIn: 1, optedOut: 0),
            OptInCount(day: day0, appVersion: "1.0", registered: 1, optedIn: 0, optedOut: 1),
            OptInCount(day: day1, appVersion: "1.1", registered: 0, optedIn: 1, optedOut: 0),
        ])
    }

    @Test(arguments: Backend.allCases) func campaignsSkipDevicesNotOptedInUnlessSilentOnTheirPlatform(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        try register(stores.devices, "IN", types: 7, at: 10)
        try register(stores.devices, "OUT", types: 0, at: 10)
        try register(stores.devices, "UNKNOWN", types: nil, at: 10)
        func reached(_ configure: (inout MessageSpec) -> Void, at now: Int64) throws -> [String] {
            var spec = MessageSpec(content: ["default": "Hi"])
            configure(&spec)
            _ = try stores.campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: now)
            #expect(try stores.campaigns.activateDueMessages(now: now, shardSize: 20_000) == 1)
            // Earlier messages' shards stay leased, so the one leased is this message's.
            let shard = try #require(try stores.campaigns.leaseShards(worker: "w", count: 1, now: now, leaseUntil: now + 1_000_000).first)
            let work = try #require(try stores.campaigns.claimShard(shard, worker: "w", leaseUntil: now + 1_000_000, now: now))
            return try stores.campaigns.targets(of: work, after: work.firstDevice - 1, limit: 10).map(\.hwid).sorted()
        }
        #expect(try reached({ _ in }, at: 1_000) == ["IN", "UNKNOWN"])
        // Silent on Android only: the iOS devices still need permission.
        #expect(try reached({ $0.android.silent = true }, at: 2_000) == ["IN", "UNKNOWN"])
        #expect(try reached({ $0.ios.silent = true }, at: 3_000) == ["IN", "OUT", "UNKNOWN"])
    }
}
