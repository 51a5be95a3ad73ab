import Foundation
import Synchronization
import Testing
import Core
import TestSupport

/// The shard lifecycle with retries, against every backend: what a worker records, what a later
/// holder of the shard finds, and the funnel that results.
@Suite struct CampaignStoreTests {
    @Test(arguments: Backend.allCases) func aTransientFailureWaitsAsARetryUntilItIsSentThenTheShardIsDone(_ backend: Backend) throws {
        try CampaignStoreContract(backend).aTransientFailureWaitsAsARetryUntilItIsSentThenTheShardIsDone()
    }

    @Test(arguments: Backend.allCases) func aRetryThatFailsAgainIsRescheduledAndEndsFailedWithItsReason(_ backend: Backend) throws {
        try CampaignStoreContract(backend).aRetryThatFailsAgainIsRescheduledAndEndsFailedWithItsReason()
    }

    @Test(arguments: Backend.allCases) func retentionDeletesFinishedMessagesDeliveryRowsAndKeepsTheFunnel(_ backend: Backend) throws {
        try CampaignStoreContract(backend).retentionDeletesFinishedMessagesDeliveryRowsAndKeepsTheFunnel()
    }

    @Test(arguments: Backend.allCases) func oneIngestHoldsTheDispatcherRoleUntilItStopsRenewingOrReleasesIt(_ backend: Backend) throws {
        try CampaignStoreContract(backend).oneIngestHoldsTheDispatcherRoleUntilItStopsRenewingOrReleasesIt()
    }

    @Test(arguments: Backend.allCases) func aLaterHolderFindsWhatTheLostWorkerHadHandedOverAndWasSending(_ backend: Backend) throws {
        try CampaignStoreContract(backend).aLaterHolderFindsWhatTheLostWorkerHadHandedOverAndWasSending()
    }

    @Test(arguments: Backend.allCases) func aTransactionIdReturnsItsMessageForADayThenCreatesANewOne(_ backend: Backend) throws {
        try CampaignStoreContract(backend).aTransactionIdReturnsItsMessageForADayThenCreatesANewOne()
    }

    @Test(arguments: Backend.allCases) func concurrentRequestsWithOneTransactionIdCreateOneMessage(_ backend: Backend) throws {
        try CampaignStoreContract(backend).concurrentRequestsWithOneTransactionIdCreateOneMessage()
    }

    @Test(arguments: Backend.allCases) func messagesPageNewestFirstAndAddUpOverAPeriod(_ backend: Backend) throws {
        try CampaignStoreContract(backend).messagesPageNewestFirstAndAddUpOverAPeriod()
    }

    @Test(arguments: Backend.allCases) func unknownDevicesAreTheEntriesMatchingNoHWIDAndNoToken(_ backend: Backend) throws {
        try CampaignStoreContract(backend).unknownDevicesAreTheEntriesMatchingNoHWIDAndNoToken()
    }

    @Test(arguments: Backend.allCases) func theNextRecordOfADeletedMessagesShardCountsAndCancelsIt(_ backend: Backend) throws {
        try CampaignStoreContract(backend).theNextRecordOfADeletedMessagesShardCountsAndCancelsIt()
    }

    @Test(arguments: Backend.allCases) func aPageSkipsTheDevicesRecordedAnywhereInTheRestOfTheRange(_ backend: Backend) throws {
        try CampaignStoreContract(backend).aPageSkipsTheDevicesRecordedAnywhereInTheRestOfTheRange()
    }

    @Test(arguments: Backend.allCases) func aTagFilteredPageIsFullWhereverItsTargetsThinOut(_ backend: Backend) throws {
        try CampaignStoreContract(backend).aTagFilteredPageIsFullWhereverItsTargetsThinOut()
    }

    @Test(arguments: Backend.allCases) func aCappedPageCountsEachTargetsSentPushesSinceBothMoments(_ backend: Backend) throws {
        try CampaignStoreContract(backend).aCappedPageCountsEachTargetsSentPushesSinceBothMoments()
    }

    @Test(arguments: Backend.allCases) func aBatchRecordedTwiceCountsOnceWithItsFailureReasons(_ backend: Backend) throws {
        try CampaignStoreContract(backend).aBatchRecordedTwiceCountsOnceWithItsFailureReasons()
    }

    @Test(arguments: Backend.allCases) func pagesAndRetriesCarryTheWebKeysEachBrowserLastRegistered(_ backend: Backend) throws {
        try CampaignStoreContract(backend).pagesAndRetriesCarryTheWebKeysEachBrowserLastRegistered()
    }
}

/// The bodies of `CampaignStoreTests`, on a fresh database of one backend.
struct CampaignStoreContract {
    let fixture: StoreFixture
    let devices: any DeviceStore
    let campaigns: any CampaignStore
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s"),
                       AppConfiguration(code: "APP-2", name: "Two", apiToken: "u", sink: "s")]

    init(_ backend: Backend) throws {
        fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: Self.apps)
        devices = stores.devices
        campaigns = stores.campaigns
    }

    /// Registers `count` iOS devices, creates a message to all of them, and leases its one shard to `worker`.
    func leasedShard(devices count: Int, worker: String = "w1", now: Int64 = 1_000) throws -> ShardWork {
        for index in 0..<count {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H\(index)", pushToken: "tok\(index)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 1), tags: []), now: now)
        }
        var spec = MessageSpec(content: ["default": "Hi"])
        spec.schedule = MessageSpec.Schedule(sendAt: now, perDeviceTimezone: false)
        _ = try campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: now)
        #expect(try campaigns.activateDueMessages(now: now, shardSize: 20_000) == 1)
        let shard = try #require(try campaigns.leaseShards(worker: worker, count: 1, now: now, leaseUntil: now + 30).first)
        return try #require(try campaigns.claimShard(shard, worker: worker, leaseUntil: now + 30, now: now))
    }

    func funnel() throws -> MessageStatus {
        try #require(try campaigns.recentMessages(app: "APP-1", limit: 1, offset: 0).first)
    }

    func retrying(_ device: Int64, next: Int64, ambiguous: Bool = false) -> DeliveryRecord {
        DeliveryRecord(deviceID: device, outcome: .retrying, reason: "ServiceUnavailable", ambiguous: ambiguous,
                       schedule: RetrySchedule(nextAt: next, expiresAt: next + 3600))
    }

    func aTransientFailureWaitsAsARetryUntilItIsSentThenTheShardIsDone() throws {
        let work = try leasedShard(devices: 3)
        let targets = try campaigns.targets(of: work, after: 0, limit: 10)
        #expect(targets.count == 3)
        let ids = targets.map(\.deviceID)
        #expect(try campaigns.markAttempted(work, through: ids[2], worker: "w1"))
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[0], outcome: .sent), retrying(ids[1], next: 1_005),
                                      DeliveryRecord(deviceID: ids[2], outcome: .failed, reason: "BadDeviceToken")],
                                     work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: nil))
        var status = try funnel()
        #expect((status.targeted, status.sent, status.failed, status.retrying) == (3, 1, 1, 1))
        // A retrying device is not targeted again by a page; it waits until it is due.
        #expect(try campaigns.targets(of: work, after: 0, limit: 10).isEmpty)
        #expect(try campaigns.dueRetries(of: work, now: 1_004, limit: 10).isEmpty)
        #expect(try campaigns.nextRetry(of: work) == 1_005)
        // Handing the shard back leaves it pending until the retry is due, and the message sending.
        #expect(try campaigns.finishShard(work, worker: "w1", resumeAt: nil) == 1_005)
        #expect(try campaigns.leaseShards(worker: "w1", count: 1, now: 1_004, leaseUntil: 1_034).isEmpty)
        #expect(try campaigns.completeMessages(now: 1_004) == 0)

        let shard = try #require(try campaigns.leaseShards(worker: "w1", count: 1, now: 1_005, leaseUntil: 1_035).first)
        let again = try #require(try campaigns.claimShard(shard, worker: "w1", leaseUntil: 1_035, now: 1_005))
        let due = try campaigns.dueRetries(of: again, now: 1_005, limit: 10)
        #expect(due.map(\.deviceID) == [ids[1]] && due.first?.attempts == 1 && due.first?.target?.pushToken == "tok1")
        #expect(try campaigns.claimRetries([ids[1]], work: again, worker: "w1"))
        #expect(try campaigns.recordRetries([DeliveryRecord(deviceID: ids[1], outcome: .sent)], work: again, worker: "w1",
                                            leaseUntil: 1_035, now: 1_006))
        #expect(try campaigns.finishShard(again, worker: "w1", resumeAt: nil) == nil)
        #expect(try campaigns.completeMessages(now: 1_006) == 1)
        status = try funnel()
        #expect((status.targeted, status.sent, status.failed, status.retrying, status.ambiguous) == (3, 2, 1, 0, 0))
        #expect(status.status == .done)
    }

    func retentionDeletesFinishedMessagesDeliveryRowsAndKeepsTheFunnel() throws {
        let work = try leasedShard(devices: 3)
        let ids = try campaigns.targets(of: work, after: 0, limit: 10).map(\.deviceID)
        _ = try campaigns.record(ids.map { DeliveryRecord(deviceID: $0, outcome: .sent) }, work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: nil)
        _ = try campaigns.finishShard(work, worker: "w1", resumeAt: nil)
        #expect(try campaigns.completeMessages(now: 1_010) == 1)
        #expect(try campaigns.pruneDeliveries(finishedBefore: 1_005, limit: 10, now: 2_000) == 0, "finished after the bound")
        #expect(try campaigns.pruneDeliveries(finishedBefore: 1_011, limit: 2, now: 2_000) == 2)
        #expect(try campaigns.pruneDeliveries(finishedBefore: 1_011, limit: 2, now: 2_000) == 1)
        #expect(try campaigns.pruneDeliveries(finishedBefore: 1_011, limit: 2, now: 2_000) == 0)
        let status = try funnel()
        #expect((status.targeted, status.sent, status.status) == (3, 3, .done))
    }

    func oneIngestHoldsTheDispatcherRoleUntilItStopsRenewingOrReleasesIt() throws {
        #expect(try campaigns.dispatcherHolder(now: 1_000) == nil)
        #expect(try campaigns.holdDispatcher(ingest: "a", now: 1_000, until: 1_005))
        #expect(try !campaigns.holdDispatcher(ingest: "b", now: 1_001, until: 1_006), "a's hold has not run out")
        #expect(try campaigns.holdDispatcher(ingest: "a", now: 1_004, until: 1_009), "renewed by its holder")
        #expect(try campaigns.dispatcherHolder(now: 1_009) == "a")
        #expect(try !campaigns.holdDispatcher(ingest: "b", now: 1_009, until: 1_014))
        // a stops renewing: once its hold has run out, b takes over.
        #expect(try campaigns.dispatcherHolder(now: 1_010) == nil)
        #expect(try campaigns.holdDispatcher(ingest: "b", now: 1_010, until: 1_015))
        #expect(try campaigns.dispatcherHolder(now: 1_010) == "b")
        // A graceful stop gives the role up at once; releasing a role one does not hold changes nothing.
        try campaigns.releaseDispatcher(ingest: "a")
        #expect(try campaigns.dispatcherHolder(now: 1_011) == "b")
        try campaigns.releaseDispatcher(ingest: "b")
        #expect(try campaigns.dispatcherHolder(now: 1_011) == nil)
        #expect(try campaigns.holdDispatcher(ingest: "a", now: 1_011, until: 1_016))
    }

    func aRetryThatFailsAgainIsRescheduledAndEndsFailedWithItsReason() throws {
        let work = try leasedShard(devices: 1)
        let id = try #require(try campaigns.targets(of: work, after: 0, limit: 10).first?.deviceID)
        _ = try campaigns.record([retrying(id, next: 1_001)], work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: nil)
        _ = try campaigns.claimRetries([id], work: work, worker: "w1")
        _ = try campaigns.recordRetries([retrying(id, next: 1_003)], work: work, worker: "w1", leaseUntil: 1_030, now: 1_001)
        let due = try campaigns.dueRetries(of: work, now: 1_003, limit: 10)
        #expect(due.first?.attempts == 2 && due.first?.reason == "ServiceUnavailable")
        _ = try campaigns.recordRetries([DeliveryRecord(deviceID: id, outcome: .failed, reason: "ServiceUnavailable")], work: work,
                                        worker: "w1", leaseUntil: 1_030, now: 1_003)
        let status = try funnel()
        #expect((status.targeted, status.sent, status.failed, status.retrying) == (1, 0, 1, 0))
        #expect(status.errors == ["ServiceUnavailable": 1])
        #expect(try campaigns.nextRetry(of: work) == nil)
    }

    func aLaterHolderFindsWhatTheLostWorkerHadHandedOverAndWasSending() throws {
        let work = try leasedShard(devices: 4)
        let ids = try campaigns.targets(of: work, after: 0, limit: 10).map(\.deviceID)
        // w1 handed the first device to the provider, recorded it while handing over the next two (one
        // commit), and was sending a retry of the last.
        #expect(try campaigns.markAttempted(work, through: ids[0], worker: "w1"))
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[0], outcome: .sent), retrying(ids[3], next: 1_000)], work: work,
                                     worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: ids[2]))
        // Noting a lower device never moves the mark back.
        #expect(try campaigns.record([], work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: ids[1]))
        #expect(try campaigns.claimRetries([ids[3]], work: work, worker: "w1"))
        // w1 vanishes; its lease runs out and w2 takes the shard.
        #expect(try campaigns.releaseLeases(now: 1_031, liveWorkers: ["w2"]) == 1)
        #expect(try campaigns.extendLease(shard: work.shardID, worker: "w1", leaseUntil: 1_060) == false)
        let shard = try #require(try campaigns.leaseShards(worker: "w2", count: 1, now: 1_031, leaseUntil: 1_061).first)
        let taken = try #require(try campaigns.claimShard(shard, worker: "w2", leaseUntil: 1_061, now: 1_031))
        #expect(taken.attempts == 2 && taken.attemptedThrough == ids[2])
        #expect(try funnel().ambiguous == 1)
        let due = try campaigns.dueRetries(of: taken, now: 1_031, limit: 10)
        #expect(due.map(\.deviceID) == [ids[3]] && due.first?.ambiguous == 1)
        // The devices handed over without an outcome are still without one: the runner sends them once more.
        var range = taken
        range.lastDevice = ids[2]
        #expect(try campaigns.targets(of: range, after: 0, limit: 10).map(\.deviceID) == [ids[1], ids[2]])
        // The old holder can no longer write.
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[1], outcome: .sent)], work: work, worker: "w1", leaseUntil: 1_060,
                                     now: 1_032, attemptedThrough: ids[3]) == false)
        #expect(try campaigns.markAttempted(work, through: ids[3], worker: "w1") == false)
        #expect(try fixture.count("SELECT attempted_through FROM message_shards WHERE id = \(work.shardID)") == Int(ids[2]))
    }

    func pagesAndRetriesCarryTheWebKeysEachBrowserLastRegistered() throws {
        let first = WebPushKeys(p256dh: "BFirstKey", auth: "FirstAuth"), second = WebPushKeys(p256dh: "BSecondKey", auth: "SecondAuth")
        func register(_ hwid: String, platform: Int, keys: WebPushKeys?, tags: [TagUpdate] = []) throws {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "https://push.example/\(hwid)", gateway: nil,
                                                          webKeys: keys, attributes: DeviceAttributes(platform: platform), tags: tags),
                                       now: 900)
        }
        try register("chrome", platform: Platform.chrome, keys: first)
        // A new subscription replaces the keys, with or without tags (PostgreSQL batches only the former).
        try register("firefox", platform: Platform.firefox, keys: first)
        try register("firefox", platform: Platform.firefox, keys: second)
        try register("edge", platform: Platform.edge, keys: first)
        try register("edge", platform: Platform.edge, keys: second, tags: [TagUpdate(name: "badge", operation: .set(.int(2)))])
        // A registration without keys (the device became an Android phone) clears them.
        try register("was-web", platform: Platform.chrome, keys: first)
        try register("was-web", platform: Platform.android, keys: nil)
        let work = try leasedShard(devices: 1)
        let targets = try campaigns.targets(of: work, after: 0, limit: 10)
        let keys = Dictionary(uniqueKeysWithValues: targets.map { ($0.hwid, $0.webKeys) })
        #expect(keys == ["chrome": first, "firefox": second, "edge": second, "was-web": nil, "H0": nil])
        #expect(targets.first { $0.hwid == "firefox" }?.pushToken == "https://push.example/firefox")

        // A retry's target carries them too.
        let firefox = try #require(targets.first { $0.hwid == "firefox" })
        _ = try campaigns.record([DeliveryRecord(deviceID: firefox.deviceID, outcome: .retrying, reason: "HTTP503",
                                                 schedule: RetrySchedule(nextAt: 1_000, expiresAt: 2_000))],
                                 work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: nil)
        let due = try campaigns.dueRetries(of: work, now: 1_001, limit: 10)
        #expect(due.map(\.target?.webKeys) == [second])
    }

    func aPageSkipsTheDevicesRecordedAnywhereInTheRestOfTheRange() throws {
        let work = try leasedShard(devices: 6)
        let ids = try campaigns.targets(of: work, after: 0, limit: 10).map(\.deviceID)
        #expect(ids.count == 6)
        // Recorded out of order, as a later holder's recovery and a lost holder's late commit may.
        for id in [ids[5], ids[1], ids[3]] {
            #expect(try campaigns.record([DeliveryRecord(deviceID: id, outcome: .sent)], work: work, worker: "w1", leaseUntil: 1_030,
                                         now: 1_000, attemptedThrough: nil))
        }
        #expect(try campaigns.targets(of: work, after: 0, limit: 10).map(\.deviceID) == [ids[0], ids[2], ids[4]])
        #expect(try campaigns.targets(of: work, after: 0, limit: 2).map(\.deviceID) == [ids[0], ids[2]])
        #expect(try campaigns.targets(of: work, after: ids[2], limit: 10).map(\.deviceID) == [ids[4]])
        #expect(try campaigns.targets(of: work, after: ids[4], limit: 10).isEmpty)
        let capped = try campaigns.cappedTargets(of: work, after: ids[0], limit: 10, since1: 0, since2: 0)
        #expect(capped.targets.map(\.deviceID) == [ids[2], ids[4]] && capped.recentSends.isEmpty)
    }

    /// A page holds `limit` targets until the shard's range ends, however many devices it passes
    /// for them: here one in two, then one in forty, then every one (PostgreSQL reads a page whose
    /// conditions read tags in windows sized from the page before, see `PageWindow`), leaving out
    /// the devices recorded already wherever they are, with the pushes each target was sent; a
    /// message nobody matches reads an empty page.
    func aTagFilteredPageIsFullWhereverItsTargetsThinOut() throws {
        func matches(_ index: Int) -> Bool { index < 200 ? index % 2 == 0 : index < 600 ? index % 40 == 0 : true }
        for index in 0..<700 {
            let tags: [String: JSON] = matches(index) ? ["Level": 1] : index < 200 ? ["Level": 0] : [:]
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H\(index)", pushToken: "tok\(index)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 1), tags: try TagUpdate.parse(tags)),
                                       now: 1_000)
        }
        func shard(level: JSON, now: Int64) throws -> ShardWork {
            var spec = MessageSpec(content: ["default": "Hi"])
            spec.schedule = MessageSpec.Schedule(sendAt: now, perDeviceTimezone: false)
            spec.conditions = [try ConditionFixture.parse(["Level", "EQ", level])]
            _ = try campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: now)
            #expect(try campaigns.activateDueMessages(now: now, shardSize: 20_000) == 1)
            let shard = try #require(try campaigns.leaseShards(worker: "w1", count: 1, now: now, leaseUntil: now + 30).first)
            return try #require(try campaigns.claimShard(shard, worker: "w1", leaseUntil: now + 30, now: now))
        }
        let work = try shard(level: 1, now: 1_000)
        let other = try shard(level: 2, now: 1_000)
        #expect(try campaigns.targets(of: other, after: 0, limit: 20).isEmpty)
        let ids = Dictionary(uniqueKeysWithValues: try campaigns.targets(of: work, after: 0, limit: 1_000).map { ($0.hwid, $0.deviceID) })
        #expect(ids.count == (0..<700).filter(matches).count)
        // Recorded already for this message, and sent the other one, in each part of the range.
        let recorded = ["H2", "H198", "H240", "H600", "H699"]
        let sentOther = ["H4", "H280", "H640"]
        func sent(_ hwids: [String]) throws -> [DeliveryRecord] {
            try hwids.map { DeliveryRecord(deviceID: try #require(ids[$0]), outcome: .sent) }
        }
        #expect(try campaigns.record(try sent(recorded), work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: nil))
        #expect(try campaigns.record(try sent(sentOther), work: other, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: nil))
        let expected = (0..<700).filter(matches).map { "H\($0)" }.filter { !recorded.contains($0) }
        for (limit, capped) in [(20, false), (7, true), (20, false)] {
            var pages: [[Target]] = []
            var recentSends: [Int64: (Int, Int)] = [:]
            var after = work.firstDevice - 1
            while pages.count <= expected.count {
                let page: [Target]
                if capped {
                    let read = try campaigns.cappedTargets(of: work, after: after, limit: limit, since1: 0, since2: 0)
                    page = read.targets
                    recentSends.merge(read.recentSends) { first, _ in first }
                } else {
                    page = try campaigns.targets(of: work, after: after, limit: limit)
                }
                pages.append(page)
                guard let last = page.last else { break }
                after = last.deviceID
            }
            #expect(pages.flatMap { $0 }.map(\.hwid) == expected, "limit \(limit)")
            #expect(pages.dropLast(2).allSatisfy { $0.count == limit }, "\(pages.map(\.count))")
            #expect(pages.last?.isEmpty == true)
            if capped {
                #expect(Set(recentSends.keys) == Set(sentOther.compactMap { ids[$0] }) && recentSends.values.allSatisfy { $0 == (1, 1) })
            }
        }
    }

    /// The caps count sent pushes of every message, strictly after each moment; throttled and
    /// failed outcomes do not count, and only the page's devices are counted.
    func aCappedPageCountsEachTargetsSentPushesSinceBothMoments() throws {
        let first = try leasedShard(devices: 4, now: 1_000)
        let ids = try campaigns.targets(of: first, after: 0, limit: 10).map(\.deviceID)
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[0], outcome: .sent), DeliveryRecord(deviceID: ids[1], outcome: .sent),
                                      DeliveryRecord(deviceID: ids[2], outcome: .throttled),
                                      DeliveryRecord(deviceID: ids[3], outcome: .failed, reason: "BadDeviceToken")],
                                     work: first, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: nil))
        #expect(try campaigns.finishShard(first, worker: "w1", resumeAt: nil) == nil)
        let second = try leasedShard(devices: 4, now: 2_000)
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[0], outcome: .sent), DeliveryRecord(deviceID: ids[3], outcome: .sent)],
                                     work: second, worker: "w1", leaseUntil: 2_030, now: 2_000, attemptedThrough: nil))
        #expect(try campaigns.finishShard(second, worker: "w1", resumeAt: nil) == nil)
        let third = try leasedShard(devices: 4, now: 3_000)

        var page = try campaigns.cappedTargets(of: third, after: 0, limit: 10, since1: 1_500, since2: 999)
        #expect(page.targets.map(\.deviceID) == ids)
        #expect(page.targets.map(\.pushToken) == ["tok0", "tok1", "tok2", "tok3"])
        #expect(page.recentSends.mapValues { [$0.0, $0.1] } == [ids[0]: [1, 2], ids[1]: [0, 1], ids[3]: [1, 1]])
        page = try campaigns.cappedTargets(of: third, after: 0, limit: 10, since1: 1_000, since2: 2_000)
        #expect(page.recentSends.mapValues { [$0.0, $0.1] } == [ids[0]: [1, 0], ids[3]: [1, 0]])
        page = try campaigns.cappedTargets(of: third, after: ids[0], limit: 2, since1: 0, since2: 0)
        #expect(page.targets.map(\.deviceID) == [ids[1], ids[2]])
        #expect(page.recentSends.mapValues { [$0.0, $0.1] } == [ids[1]: [1, 1]])
    }

    /// A batch with final outcomes only, recorded again as after a lost connection: the second
    /// time adds nothing; a device twice in a batch counts its first outcome; a batch holding a
    /// recorded device and a new one records the new one.
    func aBatchRecordedTwiceCountsOnceWithItsFailureReasons() throws {
        let work = try leasedShard(devices: 5)
        let ids = try campaigns.targets(of: work, after: 0, limit: 10).map(\.deviceID)
        let batch = [DeliveryRecord(deviceID: ids[0], outcome: .sent), DeliveryRecord(deviceID: ids[1], outcome: .failed, reason: "BadDeviceToken"),
                     DeliveryRecord(deviceID: ids[2], outcome: .throttled), DeliveryRecord(deviceID: ids[3], outcome: .failed),
                     DeliveryRecord(deviceID: ids[0], outcome: .failed, reason: "Unregistered")]
        for _ in 0..<2 {
            #expect(try campaigns.record(batch, work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: ids[3]))
            let status = try funnel()
            #expect((status.targeted, status.sent, status.failed, status.throttled, status.retrying) == (4, 1, 2, 1, 0))
            #expect(status.errors == ["BadDeviceToken": 1, "Unknown": 1])
        }
        #expect(try fixture.count("SELECT attempted_through FROM message_shards WHERE id = \(work.shardID)") == Int(ids[3]))
        #expect(try campaigns.targets(of: work, after: 0, limit: 10).map(\.deviceID) == [ids[4]])
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[4], outcome: .sent), DeliveryRecord(deviceID: ids[0], outcome: .failed)],
                                     work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: ids[4]))
        let status = try funnel()
        #expect((status.targeted, status.sent, status.failed, status.throttled) == (5, 2, 2, 1))
        #expect(try campaigns.targets(of: work, after: 0, limit: 10).isEmpty)
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[1], outcome: .sent)], work: work, worker: "w2", leaseUntil: 1_030,
                                     now: 1_001, attemptedThrough: nil) == false, "not w2's lease")
    }

    func message(_ transactionID: String, at now: Int64) throws -> String {
        var spec = MessageSpec(content: ["default": "Digest"])
        spec.schedule = MessageSpec.Schedule(sendAt: now, perDeviceTimezone: false)
        return try #require(try campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: transactionID)], now: now).first)
    }

    /// Also: retention of the ids.
    func aTransactionIdReturnsItsMessageForADayThenCreatesANewOne() throws {
        let day = NewMessage.transactionWindow
        let first = try message("daily-digest", at: 1_000)
        #expect(try message("daily-digest", at: 1_000 + day - 1) == first)
        #expect(try fixture.count("SELECT count(*) FROM messages") == 1)
        // The next day the id sends again, and names the new message for a day from then.
        let second = try message("daily-digest", at: 1_000 + day)
        #expect(second != first)
        #expect(try message("daily-digest", at: 1_000 + 2 * day - 1) == second)
        #expect(try message("other", at: 1_000 + day) != second)
        #expect(try fixture.count("SELECT count(*) FROM messages") == 3)
        #expect(try campaigns.messageStatus(app: "APP-1", code: first) != nil)
        // Retention deletes ids once their window has passed, oldest first, and no id still in its window.
        #expect(try fixture.count("SELECT count(*) FROM message_transactions") == 2)
        #expect(try campaigns.pruneMessageTransactions(expiredAt: 1_000 + 2 * day - 1, limit: 10) == 0)
        #expect(try campaigns.pruneMessageTransactions(expiredAt: 1_000 + 2 * day, limit: 1) == 1)
        #expect(try campaigns.pruneMessageTransactions(expiredAt: 1_000 + 2 * day, limit: 1) == 1)
        #expect(try fixture.count("SELECT count(*) FROM message_transactions") == 0)
        #expect(try fixture.count("SELECT count(*) FROM messages") == 3, "the messages stay")
        let third = try message("daily-digest", at: 1_000 + 2 * day)
        #expect(third != second)
        #expect(try message("daily-digest", at: 1_000 + 2 * day + 5) == third)
    }

    func concurrentRequestsWithOneTransactionIdCreateOneMessage() throws {
        let codes = Mutex<[String]>([])
        let failures = Mutex<[String]>([])
        var spec = MessageSpec(content: ["default": "Order"])
        spec.schedule = MessageSpec.Schedule(sendAt: 5_000, perDeviceTimezone: false)
        let campaigns = self.campaigns, message = NewMessage(spec: spec, transactionID: "order-1001")
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                let code = try campaigns.createMessages(app: "APP-1", [message], now: 5_000)[0]
                codes.withLock { $0.append(code) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let all = codes.withLock { $0 }
        #expect(all.count == 8 && Set(all).count == 1, "\(all)")
        #expect(try fixture.count("SELECT count(*) FROM messages") == 1)
    }

    func unknownDevicesAreTheEntriesMatchingNoHWIDAndNoToken() throws {
        for index in 0..<3 {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H\(index)", pushToken: "token-\(index)-abcdefghijklmnop",
                                                          gateway: nil, attributes: DeviceAttributes(platform: 1), tags: []), now: 1)
        }
        let asked = ["H0", "token-1-abcdefghijklmnop", "ghost", "token-2-abcdefghijklmnoX", "H2", "token-9"]
        #expect(try campaigns.unknownDevices(app: "APP-1", asked) == ["ghost", "token-2-abcdefghijklmnoX", "token-9"])
        #expect(try campaigns.unknownDevices(app: "APP-1", []) == [])
    }

    func messagesPageNewestFirstAndAddUpOverAPeriod() throws {
        let work = try leasedShard(devices: 3)
        let ids = try campaigns.targets(of: work, after: 0, limit: 10).map(\.deviceID)
        #expect(try campaigns.markAttempted(work, through: ids[2], worker: "w1"))
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[0], outcome: .sent), DeliveryRecord(deviceID: ids[1], outcome: .sent),
                                      DeliveryRecord(deviceID: ids[2], outcome: .failed, reason: "BadDeviceToken")],
                                     work: work, worker: "w1", leaseUntil: 1_030, now: 1_000, attemptedThrough: nil))
        var later: [String] = []
        for index in 0..<3 {
            var spec = MessageSpec(content: ["default": "Later \(index)"])
            spec.schedule = MessageSpec.Schedule(sendAt: 90_000, perDeviceTimezone: false)
            later += try campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: 5_000 + Int64(index))
        }
        #expect(try campaigns.messageCount(app: "APP-1") == 4 && campaigns.messageCount(app: "APP-2") == 0)
        #expect(try campaigns.recentMessages(app: "APP-1", limit: 2, offset: 0).map(\.code) == [later[2], later[1]])
        let older = try campaigns.recentMessages(app: "APP-1", limit: 2, offset: 2)
        #expect(older.count == 2 && older[0].code == later[0] && older[1].sent == 2)
        #expect(try campaigns.recentMessages(app: "APP-1", limit: 2, offset: 4).isEmpty)
        #expect(try campaigns.campaignTotals(app: "APP-1", since: 0) == CampaignTotals(messages: 4, sent: 2, delivered: 0, opened: 0))
        #expect(try campaigns.campaignTotals(app: "APP-1", since: 2_000) == CampaignTotals(messages: 3, sent: 0, delivered: 0, opened: 0))
        #expect(try campaigns.campaignTotals(app: "APP-2", since: 0) == CampaignTotals())
    }

    func theNextRecordOfADeletedMessagesShardCountsAndCancelsIt() throws {
        let work = try leasedShard(devices: 2)
        let ids = try campaigns.targets(of: work, after: 0, limit: 10).map(\.deviceID)
        #expect(try campaigns.deleteMessage(app: "APP-1", code: work.messageCode, now: 1_001))
        // The push went out before the worker heard: it counts, and the worker is told to stop.
        #expect(try campaigns.record([DeliveryRecord(deviceID: ids[0], outcome: .sent)], work: work, worker: "w1", leaseUntil: 1_060,
                                     now: 1_002, attemptedThrough: nil) == false)
        let status = try funnel()
        #expect(status.status == .deleted && status.sent == 1)
        // Cancelled, no longer leased: never taken back from its worker and handed out again.
        #expect(try campaigns.releaseLeases(now: 1_100, liveWorkers: []) == 0)
        #expect(try campaigns.leaseShards(worker: "w2", count: 1, now: 1_100, leaseUntil: 1_130).isEmpty)
    }
}
