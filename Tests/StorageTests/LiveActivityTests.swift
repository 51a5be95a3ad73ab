import Testing
import Core
import TestSupport

/// Live Activity messages on every backend: each one's `aps.timestamp` is newer than the last of
/// its activity, updates of unknown or ended activities are refused with nothing stored, and an end
/// recorded as sent ends the tokens it went to.
@Suite struct LiveActivityTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
    static let iOS = DeviceAttributes(platform: 1)

    /// Devices H0 and H1 with a push-to-start token and a token for activity `m-1`.
    func stores(_ backend: Backend) throws -> (StoreFixture, StoreFixture.Stores) {
        let fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        for hwid in ["H0", "H1"] {
            try stores.devices.setActivityToken(app: "APP-1", hwid: hwid, attributes: Self.iOS, activityID: nil, token: "start-\(hwid)", now: 1)
            try stores.devices.setActivityToken(app: "APP-1", hwid: hwid, attributes: Self.iOS, activityID: "m-1", token: "m1-\(hwid)", now: 1)
        }
        return (fixture, stores)
    }

    func message(_ event: MessageSpec.LiveActivity.Event, id: String = "m-1", path: String? = "notifications[0]") -> NewMessage {
        var spec = MessageSpec(content: [:])
        spec.liveActivity = MessageSpec.LiveActivity(id: id, event: event, contentState: ["score": "1-0"], timestamp: 0)
        return NewMessage(spec: spec, transactionID: nil, path: path)
    }

    /// Creates the messages and returns each one's stored `aps.timestamp`.
    func create(_ stores: StoreFixture.Stores, _ messages: [NewMessage], now: Int64) throws -> [Int64] {
        try stores.campaigns.createMessages(app: "APP-1", messages, now: now).map { code in
            try #require(try stores.campaigns.messageStatus(app: "APP-1", code: code)?.spec.liveActivity?.timestamp)
        }
    }

    /// The refusal's text, or nil when the call succeeded.
    func refusal(_ stores: StoreFixture.Stores, _ messages: [NewMessage], now: Int64) -> String? {
        do {
            _ = try stores.campaigns.createMessages(app: "APP-1", messages, now: now)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: Backend.allCases) func eachMessageOfAnActivityHasANewerTimestampThanTheLast(_ backend: Backend) throws {
        let (fixture, stores) = try stores(backend)
        #expect(try create(stores, [message(.start)], now: 100) == [100])
        // Within one second, or with a clock that went back, the timestamp still grows by one.
        #expect(try create(stores, [message(.start), message(.update), message(.update)], now: 100) == [101, 102, 103])
        #expect(try create(stores, [message(.update)], now: 90) == [104])
        #expect(try create(stores, [message(.update)], now: 500) == [500])
        // Each activity counts on its own; an update of an activity started elsewhere (only its
        // token is known here) begins at now.
        try stores.devices.setActivityToken(app: "APP-1", hwid: "H0", attributes: Self.iOS, activityID: "m-2", token: "m2-H0", now: 2)
        #expect(try create(stores, [message(.update, id: "m-2"), message(.update)], now: 500) == [500, 501])
        #expect(try fixture.count("SELECT count(*) FROM live_activities") == 2)
        #expect(try fixture.count("SELECT max(last_timestamp) FROM live_activities") == 501)
    }

    @Test(arguments: Backend.allCases) func anUpdateOfAnUnknownActivityIsRefusedNamingTheFieldAndStoresNothing(_ backend: Backend) throws {
        let (fixture, stores) = try stores(backend)
        #expect(refusal(stores, [message(.update, id: "nope", path: "notifications[0]")], now: 10)?
            .hasPrefix("notifications[0].live_activity_id: no device registered a token for activity \"nope\"") == true)
        // The refusal of one notification stores none of the call's, the good ones before it included.
        let refused = refusal(stores, [message(.start), message(.update), message(.end, id: "nope", path: "notifications[2]")], now: 10)
        #expect(refused?.hasPrefix("notifications[2].live_activity_id:") == true, "\(refused ?? "")")
        #expect(refusal(stores, [message(.end, id: "nope", path: nil)], now: 10)?.hasPrefix("live_activity_id:") == true)
        #expect(try fixture.count("SELECT count(*) FROM messages") == 0)
        #expect(try fixture.count("SELECT count(*) FROM live_activities") == 0)
        // A start needs no token of the activity yet: it goes to push-to-start tokens.
        #expect(try create(stores, [message(.start, id: "new")], now: 10) == [10])
    }

    @Test(arguments: Backend.allCases) func anEndedActivityTakesNoMoreUpdatesUntilItStartsAgain(_ backend: Backend) throws {
        let (fixture, stores) = try stores(backend)
        #expect(try create(stores, [message(.update), message(.end)], now: 10) == [10, 11])
        for event in [MessageSpec.LiveActivity.Event.update, .end] {
            #expect(refusal(stores, [message(event)], now: 12)
                == "notifications[0].live_activity_id: activity \"m-1\" has ended; it takes no more updates")
        }
        #expect(try fixture.count("SELECT count(*) FROM messages") == 2)
        // A start under the same id begins a new activity.
        #expect(try create(stores, [message(.start), message(.update)], now: 12) == [12, 13])

        // An activity whose tokens all became inactive has ended too, though no end was sent.
        for hwid in ["H0", "H1"] {
            try stores.devices.setActivityToken(app: "APP-1", hwid: hwid, attributes: Self.iOS, activityID: "m-3", token: "m3-\(hwid)", now: 2)
        }
        #expect(try create(stores, [message(.update, id: "m-3")], now: 20) == [20])
        #expect(try stores.devices.deactivateActivityTokens(app: "APP-1", hwid: "H0", activityID: "m-3", now: 21) == 1)
        #expect(try create(stores, [message(.update, id: "m-3")], now: 21) == [21])
        #expect(try stores.devices.deactivateActivityTokens(app: "APP-1", hwid: "H1", activityID: "m-3", now: 22) == 1)
        #expect(refusal(stores, [message(.update, id: "m-3")], now: 22)?.contains("activity \"m-3\" has ended") == true)
        #expect(try fixture.count("SELECT count(*) FROM messages") == 6)
    }

    @Test(arguments: Backend.allCases) func anEndRecordedAsSentEndsTheTokensItWentToAndTheirLastTimestampIsKept(_ backend: Backend) throws {
        let (fixture, stores) = try stores(backend)
        func tokens(_ hwid: String) throws -> [String] {
            try stores.devices.activityTokens(app: "APP-1", hwid: hwid).map { "\($0.token) \($0.active) \($0.lastTimestamp.map(String.init) ?? "-")" }
        }
        func claimed(_ message: NewMessage, at now: Int64) throws -> (ShardWork, [Target]) {
            _ = try stores.campaigns.createMessages(app: "APP-1", [message], now: now)
            #expect(try stores.campaigns.activateDueMessages(now: now, shardSize: 20_000) == 1)
            let shard = try #require(try stores.campaigns.leaseShards(worker: "w", count: 1, now: now, leaseUntil: now + 1_000_000).first)
            let work = try #require(try stores.campaigns.claimShard(shard, worker: "w", leaseUntil: now + 1_000_000, now: now))
            let targets = try stores.campaigns.targets(of: work, after: work.firstDevice - 1, limit: 10)
            #expect(try stores.campaigns.markAttempted(work, through: try #require(targets.last?.deviceID), worker: "w"))
            return (work, targets)
        }

        // A sent start notes its timestamp on the push-to-start token, which stays active.
        let (start, starters) = try claimed(message(.start), at: 100)
        #expect(try stores.campaigns.record(starters.map { DeliveryRecord(deviceID: $0.deviceID, outcome: .sent) }, work: start, worker: "w",
                                            leaseUntil: 1_000_000, now: 100, attemptedThrough: nil))
        #expect(try tokens("H0") == ["start-H0 true 100", "m1-H0 true -"])

        // The end: sent to H0, retried for H1, whose token stays active until the retry is sent.
        let (end, targets) = try claimed(message(.end), at: 200)
        #expect(targets.map(\.pushToken) == ["m1-H0", "m1-H1"])
        let outcomes = [DeliveryRecord(deviceID: targets[0].deviceID, outcome: .sent),
                        DeliveryRecord(deviceID: targets[1].deviceID, outcome: .retrying, reason: "ServiceUnavailable",
                                       schedule: RetrySchedule(nextAt: 210, expiresAt: 3_600))]
        #expect(try stores.campaigns.record(outcomes, work: end, worker: "w", leaseUntil: 1_000_000, now: 201, attemptedThrough: nil))
        #expect(try tokens("H0") == ["start-H0 true 100", "m1-H0 false 200"])
        #expect(try tokens("H1") == ["start-H1 true 100", "m1-H1 true -"])
        let due = try stores.campaigns.dueRetries(of: end, now: 210, limit: 10)
        #expect(due.map { $0.target?.pushToken } == ["m1-H1"])
        #expect(try stores.campaigns.claimRetries(due.map(\.deviceID), work: end, worker: "w"))
        #expect(try stores.campaigns.recordRetries([DeliveryRecord(deviceID: targets[1].deviceID, outcome: .sent)], work: end, worker: "w",
                                                   leaseUntil: 1_000_000, now: 211))
        #expect(try tokens("H1") == ["start-H1 true 100", "m1-H1 false 200"])
        // Recording the end again (a second holder of the shard) changes nothing.
        #expect(try stores.campaigns.record(outcomes, work: end, worker: "w", leaseUntil: 1_000_000, now: 212, attemptedThrough: nil))
        #expect(try tokens("H0") == ["start-H0 true 100", "m1-H0 false 200"])
        #expect(try fixture.count("SELECT count(*) FROM live_activity_tokens WHERE activity_id = 'm-1' AND last_timestamp = 200") == 2)
    }
}
