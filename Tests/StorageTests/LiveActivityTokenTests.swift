import Testing
import Core
import TestSupport

/// Live Activity tokens on every backend: one per device and activity (nil: push-to-start), a new
/// token replacing the old and making it active again, kept across a reopen, and ended by the SDK's
/// stopLiveActivity; a Live Activity message's recipients are those tokens.
@Suite struct LiveActivityTokenTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
    static let iOS = DeviceAttributes(platform: 1)

    @Test(arguments: Backend.allCases) func tokensAreKeptPerDeviceAndActivityAndReplaced(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let devices = try fixture.devices(apps: Self.apps)
        try devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: Self.iOS, activityID: nil, token: "start-1", now: 10)
        try devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: DeviceAttributes(), activityID: "match-7", token: "a-1", now: 11)
        try devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: DeviceAttributes(), activityID: "match-8", token: "b-1", now: 12)
        try devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: DeviceAttributes(), activityID: nil, token: "start-2", now: 13)
        try devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: DeviceAttributes(), activityID: "match-7", token: "a-2", now: 14)
        try devices.setActivityToken(app: "APP-1", hwid: "H1", attributes: Self.iOS, activityID: "match-7", token: "c-1", now: 15)
        #expect(try fixture.count("SELECT count(*) FROM live_activity_tokens") == 4)
        let reopened = try fixture.devices(apps: Self.apps)
        #expect(try reopened.activityTokens(app: "APP-1", hwid: "H0") == [
            LiveActivityToken(hwid: "H0", activityID: nil, token: "start-2", active: true, lastTimestamp: nil),
            LiveActivityToken(hwid: "H0", activityID: "match-7", token: "a-2", active: true, lastTimestamp: nil),
            LiveActivityToken(hwid: "H0", activityID: "match-8", token: "b-1", active: true, lastTimestamp: nil),
        ])
        #expect(try reopened.activityTokens(app: "APP-1", hwid: "H1").map(\.token) == ["c-1"])
        #expect(try reopened.device(app: "APP-1", hwid: "H1")?.platform == 1)
    }

    @Test(arguments: Backend.allCases) func stoppingEndsTheDevicesActivityTokensButNotItsPushToStartToken(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let devices = try fixture.devices(apps: Self.apps)
        try devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: Self.iOS, activityID: nil, token: "start", now: 10)
        for activity in ["m-1", "m-2", "m-3"] {
            try devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: Self.iOS, activityID: activity, token: "t-\(activity)", now: 10)
        }
        try devices.setActivityToken(app: "APP-1", hwid: "H1", attributes: Self.iOS, activityID: "m-1", token: "other", now: 10)
        #expect(try devices.deactivateActivityTokens(app: "APP-1", hwid: "H0", activityID: "m-1", now: 11) == 1)
        #expect(try devices.deactivateActivityTokens(app: "APP-1", hwid: "H0", activityID: "m-1", now: 12) == 0)
        #expect(try devices.activityTokens(app: "APP-1", hwid: "H0").map(\.active) == [true, false, true, true])
        #expect(try devices.deactivateActivityTokens(app: "APP-1", hwid: "H0", activityID: nil, now: 13) == 2)
        #expect(try devices.activityTokens(app: "APP-1", hwid: "H0").map(\.active) == [true, false, false, false])
        #expect(try devices.activityTokens(app: "APP-1", hwid: "H1").map(\.active) == [true])
        #expect(try devices.deactivateActivityTokens(app: "APP-1", hwid: "NOBODY", activityID: nil, now: 14) == 0)
        // A new token for an ended activity makes it active again.
        try devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: Self.iOS, activityID: "m-2", token: "t-new", now: 15)
        #expect(try devices.activityTokens(app: "APP-1", hwid: "H0").map(\.active) == [true, false, true, false])
    }

    @Test(arguments: Backend.allCases) func aTokenOfAnUnknownDeviceWithoutAPlatformIsRefusedAndNothingKept(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let devices = try fixture.devices(apps: Self.apps)
        #expect(throws: StoreError.self) {
            try devices.setActivityToken(app: "APP-1", hwid: "NEW", attributes: DeviceAttributes(), activityID: "m", token: "t", now: 10)
        }
        #expect(try fixture.count("SELECT count(*) FROM live_activity_tokens") == 0)
        #expect(try devices.device(app: "APP-1", hwid: "NEW") == nil)
    }

    /// Creates `spec` as the only due message and claims its shard.
    func claimedShard(_ stores: StoreFixture.Stores, _ spec: MessageSpec, at now: Int64) throws -> ShardWork {
        _ = try stores.campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: now)
        #expect(try stores.campaigns.activateDueMessages(now: now, shardSize: 20_000) == 1)
        // Earlier messages' shards stay leased, so the one leased is this message's.
        let shard = try #require(try stores.campaigns.leaseShards(worker: "w", count: 1, now: now, leaseUntil: now + 1_000_000).first)
        return try #require(try stores.campaigns.claimShard(shard, worker: "w", leaseUntil: now + 1_000_000, now: now))
    }

    @Test(arguments: Backend.allCases) func aLiveActivityMessageGoesToTheActiveTokensOfItsActivityAndADeadOneBecomesInactive(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        for hwid in ["H0", "OUT"] {
            try stores.devices.registerDevice(DeviceRegistration(
                app: "APP-1", hwid: hwid, pushToken: "push-\(hwid)", gateway: nil,
                attributes: DeviceAttributes(platform: 1, notificationTypes: hwid == "OUT" ? 0 : 7), tags: []), now: 10)
        }
        try stores.devices.registerDevice(DeviceRegistration(
            app: "APP-1", hwid: "ANDROID", pushToken: "push-android", gateway: nil, attributes: DeviceAttributes(platform: 3), tags: []), now: 10)
        for hwid in ["H0", "OUT", "H2"] {
            try stores.devices.setActivityToken(app: "APP-1", hwid: hwid, attributes: Self.iOS, activityID: nil, token: "start-\(hwid)", now: 11)
            try stores.devices.setActivityToken(app: "APP-1", hwid: hwid, attributes: Self.iOS, activityID: "m-1", token: "m1-\(hwid)", now: 11)
        }
        try stores.devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: Self.iOS, activityID: "m-2", token: "m2-H0", now: 11)
        #expect(try stores.devices.deactivateActivityTokens(app: "APP-1", hwid: "OUT", activityID: "m-1", now: 12) == 1)
        func recipients(_ work: ShardWork) throws -> [String] {
            try stores.campaigns.targets(of: work, after: work.firstDevice - 1, limit: 10).map { "\($0.hwid) \($0.pushToken)" }.sorted()
        }
        func message(_ event: MessageSpec.LiveActivity.Event, _ configure: (inout MessageSpec) -> Void = { _ in }) -> MessageSpec {
            var spec = MessageSpec(content: ["default": "Kick-off"])
            spec.liveActivity = MessageSpec.LiveActivity(id: "m-1", event: event, contentState: ["score": "0-0"], timestamp: 100)
            configure(&spec)
            return spec
        }

        // A start goes to push-to-start tokens (opted out or without a push token too), of the devices asked for.
        #expect(try recipients(claimedShard(stores, message(.start), at: 20)) == ["H0 start-H0", "H2 start-H2", "OUT start-OUT"])
        #expect(try recipients(claimedShard(stores, message(.start) { $0.devices = ["H2", "ANDROID"] }, at: 21)) == ["H2 start-H2"])
        // An update or end goes to the activity's active tokens.
        let update = try claimedShard(stores, message(.update), at: 22)
        #expect(try recipients(update) == ["H0 m1-H0", "H2 m1-H2"])
        let end = try claimedShard(stores, message(.end), at: 23)
        #expect(try recipients(end) == ["H0 m1-H0", "H2 m1-H2"])

        // A retry goes to the activity token while it is active.
        let targets = try stores.campaigns.targets(of: update, after: update.firstDevice - 1, limit: 10)
        let retries = targets.map { DeliveryRecord(deviceID: $0.deviceID, outcome: .retrying, reason: "ServiceUnavailable",
                                                   schedule: RetrySchedule(nextAt: 30, expiresAt: 3_600)) }
        #expect(try stores.campaigns.markAttempted(update, through: targets[1].deviceID, worker: "w"))
        #expect(try stores.campaigns.record(retries, work: update, worker: "w", leaseUntil: 1_000_000, now: 24, attemptedThrough: nil))
        #expect(try stores.devices.deactivateActivityTokens(app: "APP-1", hwid: "H2", activityID: "m-1", now: 25) == 1)
        let due = try stores.campaigns.dueRetries(of: update, now: 30, limit: 10)
        #expect(due.map { $0.target.map { "\($0.hwid) \($0.pushToken)" } ?? "none" }.sorted() == ["H0 m1-H0", "none"])

        // A token APNs calls dead becomes inactive; the device's push token stays valid.
        let dead = DeliveryRecord(deviceID: targets[0].deviceID, outcome: .failed, reason: "BadDeviceToken", deadToken: "m1-H0")
        #expect(try stores.campaigns.record([dead], work: end, worker: "w", leaseUntil: 1_000_000, now: 31, attemptedThrough: nil))
        #expect(try stores.devices.activityTokens(app: "APP-1", hwid: "H0").map { "\($0.token) \($0.active)" }
            == ["start-H0 true", "m1-H0 false", "m2-H0 true"])
        #expect(try fixture.count("SELECT count(*) FROM devices WHERE token_invalid_reason IS NOT NULL") == 0)
        // The activity's end was stored: it takes no more updates (LiveActivityTests).
        #expect(throws: StoreError.self) {
            try stores.campaigns.createMessages(app: "APP-1", [NewMessage(spec: message(.update), transactionID: nil)], now: 32)
        }
    }
}
