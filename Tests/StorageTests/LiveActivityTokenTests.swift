import Testing
import Core
import TestSupport

/// Live Activity tokens on every backend: one per device and activity (nil: push-to-start), a new
/// token replacing the old and making it active again, kept across a reopen, and ended by the SDK's
/// stopLiveActivity.
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
}
