import Testing
import Core

@Suite struct InboxStoreTests {
    @Test(arguments: Backend.allCases) func sentAndThrottledPushesLeaveACopyThatIsPagedMarkedAndExpires(_ backend: Backend) throws {
        try InboxStoreContract(backend).sentAndThrottledPushesLeaveACopyThatIsPagedMarkedAndExpires()
    }

    @Test(arguments: Backend.allCases) func aUserReadsTheCopiesOfAllItsDevicesOnceAndMarksThemTogether(_ backend: Backend) throws {
        try InboxStoreContract(backend).aUserReadsTheCopiesOfAllItsDevicesOnceAndMarksThemTogether()
    }
}

/// The bodies of `InboxStoreTests`, on a fresh database of one backend.
struct InboxStoreContract {
    let fixture: StoreFixture
    let devices: any DeviceStore
    let campaigns: any CampaignStore

    init(_ backend: Backend) throws {
        fixture = try StoreFixture(backend)
        let stores = try fixture.open(apps: CampaignStoreContract.apps)
        devices = stores.devices
        campaigns = stores.campaigns
    }

    /// Registers iOS devices H0…H(count-1); returns their ids in that order.
    func register(_ count: Int) throws -> [Int64] {
        for index in 0..<count {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H\(index)", pushToken: "tok\(index)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 1), tags: []), now: 900)
        }
        return try (0..<count).map { try #require(try owner("H\($0)")).deviceID }
    }

    func owner(_ hwid: String) throws -> InboxOwner? { try campaigns.inboxOwner(app: "APP-1", hwid: hwid) }

    /// Creates a message with `inbox` options due at `now` and returns its one shard, leased and claimed.
    func shard(inbox: MessageSpec.InboxOptions?, title: String, now: Int64) throws -> ShardWork {
        var spec = MessageSpec(content: ["default": "\(title) text"])
        spec.title = ["default": title]
        spec.inbox = inbox
        spec.schedule = MessageSpec.Schedule(sendAt: now, perDeviceTimezone: false)
        _ = try campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: now)
        #expect(try campaigns.activateDueMessages(now: now, shardSize: 20_000) == 1)
        let shard = try #require(try campaigns.leaseShards(worker: "w1", count: 1, now: now, leaseUntil: now + 30).first)
        return try #require(try campaigns.claimShard(shard, worker: "w1", leaseUntil: now + 30, now: now))
    }

    /// Records `outcomes` for a new message and finishes its shard.
    func send(inbox: MessageSpec.InboxOptions?, title: String, now: Int64, _ outcomes: [DeliveryRecord]) throws -> ShardWork {
        let work = try shard(inbox: inbox, title: title, now: now)
        #expect(try campaigns.record(outcomes, work: work, worker: "w1", leaseUntil: now + 30, now: now, attemptedThrough: nil))
        return work
    }

    func titles(_ page: InboxPage) -> [String] { page.entries.map { $0.spec.title?["default"] ?? "" } }

    /// How many copies devices H0…H(count-1) (none with a user id) list at `now`.
    func copies(_ count: Int, now: Int64) throws -> Int {
        try (0..<count).reduce(0) { total, index in
            total + (try campaigns.inbox(try #require(try owner("H\(index)")), after: nil, limit: 0, now: now).entries.count)
        }
    }

    func sentAndThrottledPushesLeaveACopyThatIsPagedMarkedAndExpires() throws {
        let ids = try register(4)
        let day: Int64 = 86_400
        // H0 sent, H1 failed, H2 retried (sent later), H3 held back by capping.
        let first = try send(inbox: MessageSpec.InboxOptions(image: "https://img.example/a.png", days: 1), title: "A", now: 1_000, [
            DeliveryRecord(deviceID: ids[0], outcome: .sent), DeliveryRecord(deviceID: ids[1], outcome: .failed, reason: "BadDeviceToken"),
            DeliveryRecord(deviceID: ids[2], outcome: .retrying, reason: "ServiceUnavailable",
                           schedule: RetrySchedule(nextAt: 1_005, expiresAt: 5_000)),
            DeliveryRecord(deviceID: ids[3], outcome: .throttled),
        ])
        #expect(try copies(4, now: 1_000) == 2, "the failed and the retrying push have no copy yet")
        #expect(try campaigns.claimRetries([ids[2]], work: first, worker: "w1"))
        #expect(try campaigns.recordRetries([DeliveryRecord(deviceID: ids[2], outcome: .sent)], work: first, worker: "w1",
                                            leaseUntil: 1_040, now: 1_006))
        #expect(try copies(4, now: 1_006) == 3)
        #expect(try campaigns.finishShard(first, worker: "w1", resumeAt: nil) == nil)
        // A message without inbox options leaves nothing; a later one with a fixed expiry does.
        let plain = try send(inbox: nil, title: "B", now: 1_100, ids.map { DeliveryRecord(deviceID: $0, outcome: .sent) })
        #expect(try campaigns.finishShard(plain, worker: "w1", resumeAt: nil) == nil)
        let last = try send(inbox: MessageSpec.InboxOptions(expiresAt: 10 * day), title: "C", now: 1_200,
                            ids.map { DeliveryRecord(deviceID: $0, outcome: .sent) })
        #expect(try copies(4, now: 1_200) == 7)

        let h0 = try #require(try owner("H0"))
        let all = try campaigns.inbox(h0, after: nil, limit: 0, now: 1_300)
        #expect(titles(all) == ["C", "A"] && all.unread == 2 && !all.hasMore)
        let a = try #require(all.entries.last)
        #expect(a.order == first.messageID && a.code == first.messageCode && a.hash == first.hash)
        #expect((a.status, a.sentAt, a.expiresAt, a.spec.inbox?.image) == (.delivered, 1_000, 1_000 + day, "https://img.example/a.png"))
        #expect(all.entries.first?.expiresAt == 10 * day && all.entries.first?.order == last.messageID)
        #expect(titles(try campaigns.inbox(try #require(try owner("H1")), after: nil, limit: 0, now: 1_300)) == ["C"])
        #expect(try campaigns.inbox(try #require(try owner("H2")), after: nil, limit: 0, now: 1_300).entries.last?.sentAt == 1_006)

        // Paging: one at a time, newest first.
        let page1 = try campaigns.inbox(h0, after: nil, limit: 1, now: 1_300)
        #expect(titles(page1) == ["C"] && page1.hasMore)
        let page2 = try campaigns.inbox(h0, after: page1.entries.last?.order, limit: 1, now: 1_300)
        #expect(titles(page2) == ["A"] && !page2.hasMore && page2.unread == 2)

        // Statuses only grow; deleted leaves the inbox; unknown messages change nothing.
        #expect(try campaigns.setInboxStatus(h0, order: a.order, status: .opened, now: 1_300))
        #expect(try campaigns.setInboxStatus(h0, order: a.order, status: .read, now: 1_300))
        var page = try campaigns.inbox(h0, after: nil, limit: 0, now: 1_300)
        #expect(page.entries.last?.status == .opened && page.unread == 1)
        #expect(try !campaigns.setInboxStatus(h0, order: plain.messageID, status: .read, now: 1_300))
        #expect(try campaigns.setInboxStatus(h0, order: last.messageID, status: .deleted, now: 1_300))
        page = try campaigns.inbox(h0, after: nil, limit: 0, now: 1_300)
        #expect(titles(page) == ["A"] && page.unread == 0)

        // A expires a day after its pushes: it disappears, cannot be marked, and retention deletes it.
        let h3 = try #require(try owner("H3"))
        #expect(titles(try campaigns.inbox(h3, after: nil, limit: 0, now: 1_000 + day)) == ["C"])
        #expect(try !campaigns.setInboxStatus(h3, order: a.order, status: .read, now: 1_000 + day))
        // Retention keeps the delivery rows of a message until its inbox is over: B's go, A's stay.
        #expect(try campaigns.completeMessages(now: 1_300) == 2)
        #expect(try campaigns.pruneInbox(expiredAt: 1_300, limit: 10) == 0, "not expired yet")
        #expect(try campaigns.pruneDeliveries(finishedBefore: 1_301, limit: 100, now: 1_300) == 4)
        #expect(try copies(4, now: 1_300) == 6)
        // Its bound set when it was done, A's inbox is over an hour after its last copy could have
        // expired: its status row goes, then its delivery rows.
        let over = 1_300 + day + InboxBounds.settleMargin
        #expect(try campaigns.pruneInbox(expiredAt: over - 1, limit: 10) == 0, "not over yet")
        #expect(try campaigns.pruneInbox(expiredAt: over, limit: 1) == 1)
        #expect(try campaigns.pruneInbox(expiredAt: over, limit: 1) == 0)
        #expect(try fixture.count("SELECT count(*) FROM inbox_statuses") == 1, "C's deleted status stays")
        #expect(try campaigns.pruneDeliveries(finishedBefore: 1_301, limit: 100, now: over) == 4)
        #expect(try copies(4, now: over) == 3)
        #expect(try owner("nobody") == nil)
    }

    func aUserReadsTheCopiesOfAllItsDevicesOnceAndMarksThemTogether() throws {
        let ids = try register(3)
        for hwid in ["H1", "H2"] {
            try devices.registerUser(app: "APP-1", hwid: hwid, attributes: DeviceAttributes(), userID: "u1", now: 950)
        }
        let options = MessageSpec.InboxOptions(days: 30)
        let both = try send(inbox: options, title: "both", now: 1_000, ids.map { DeliveryRecord(deviceID: $0, outcome: .sent) })
        #expect(try campaigns.finishShard(both, worker: "w1", resumeAt: nil) == nil)
        let phone = try send(inbox: options, title: "phone", now: 1_100, [DeliveryRecord(deviceID: ids[1], outcome: .sent)])
        #expect(try campaigns.finishShard(phone, worker: "w1", resumeAt: nil) == nil)
        _ = try send(inbox: options, title: "tablet", now: 1_200, [DeliveryRecord(deviceID: ids[2], outcome: .sent)])

        let tablet = try #require(try owner("H2"))
        #expect(tablet.userID == "u1")
        let page = try campaigns.inbox(tablet, after: nil, limit: 0, now: 1_300)
        #expect(titles(page) == ["tablet", "phone", "both"] && page.unread == 3)
        #expect(titles(try campaigns.inbox(try #require(try owner("H0")), after: nil, limit: 0, now: 1_300)) == ["both"])
        // Read on the tablet, the message is read on the phone too.
        #expect(try campaigns.setInboxStatus(tablet, order: both.messageID, status: .read, now: 1_300))
        let onPhone = try campaigns.inbox(try #require(try owner("H1")), after: nil, limit: 0, now: 1_300)
        #expect(onPhone.entries.map(\.status) == [.delivered, .delivered, .read] && onPhone.unread == 2)
    }
}
