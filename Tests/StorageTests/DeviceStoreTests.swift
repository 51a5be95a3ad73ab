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

    @Test(arguments: Backend.allCases) func listItemsOverTheirCapAreRefusedAlike(_ backend: Backend) throws {
        try DeviceStoreContract(backend).listItemsOverTheirCapAreRefusedAlike()
    }

    @Test(arguments: Backend.allCases) func operationsAndDeletes(_ backend: Backend) throws {
        try DeviceStoreContract(backend).operationsAndDeletes()
    }

    @Test(arguments: Backend.allCases) func aListsItemsFollowItsValue(_ backend: Backend) throws {
        try DeviceStoreContract(backend).aListsItemsFollowItsValue()
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

    @Test(arguments: Backend.allCases) func deleteForgetsTheDeviceAndKeepsItsIDFromOthers(_ backend: Backend) throws {
        try DeviceStoreContract(backend).deleteForgetsTheDeviceAndKeepsItsIDFromOthers()
    }

    @Test(arguments: Backend.allCases) func usersBadgesAndMerges(_ backend: Backend) throws {
        try DeviceStoreContract(backend).usersBadgesAndMerges()
    }

    @Test(arguments: Backend.allCases) func tagsByUserGoToEveryDeviceAndTheNewestValueWins(_ backend: Backend) throws {
        try DeviceStoreContract(backend).tagsByUserGoToEveryDeviceAndTheNewestValueWins()
    }

    @Test(arguments: Backend.allCases) func addAndDeleteTags(_ backend: Backend) throws {
        try DeviceStoreContract(backend).addAndDeleteTags()
    }

    @Test(arguments: Backend.allCases) func bulkTagJobsApplyChunksAndRecordEntryErrors(_ backend: Backend) throws {
        try DeviceStoreContract(backend).bulkTagJobsApplyChunksAndRecordEntryErrors()
    }

    @Test(arguments: Backend.allCases) func bulkTagEntriesApplyInOrder(_ backend: Backend) throws {
        try DeviceStoreContract(backend).bulkTagEntriesApplyInOrder()
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

    /// A list's items, which targeting reads, are those of its value after every kind of change:
    /// a new value that keeps some items and drops others, an append, a removal, a repeat.
    func aListsItemsFollowItsValue() throws {
        func items() throws -> String {
            let sql = "SELECT count(*) FROM device_tag_items WHERE name = 'Fav' AND item = "
            return try ["a", "b", "c", "d", "e"].filter { try fixture.count(sql + "'\($0)'") == 1 }.joined()
        }
        try register("H1", tags: ["Fav": ["a", "b", "c"]])
        #expect(try items() == "abc")
        let steps: [(TagUpdate.Operation, String)] = [
            (.set(["b", "d"]), "bd"), (.append(["e"]), "bde"), (.remove(["b"]), "de"), (.set(["d", "e"]), "de"), (.set(["a"]), "a"),
        ]
        for (operation, expected) in steps {
            try store.setTags(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), updates: [TagUpdate(name: "Fav", operation: operation)],
                              now: 200)
            #expect(try items() == expected, "\(operation)")
            #expect(try fixture.count("SELECT count(*) FROM device_tag_items") == expected.count)
        }
    }

    /// Items PostgreSQL's index could not hold are refused on both backends, however they come
    /// (set, a single string set on a list tag, appended), and nothing changes.
    func listItemsOverTheirCapAreRefusedAlike() throws {
        let longest = String(repeating: "i", count: TagRules.maxListItemBytes)
        let over = String(repeating: "é", count: TagRules.maxListItemBytes / 2 + 1)
        try register("H1", tags: ["Fav": [.string(longest)]])
        try register("H2", tags: ["Fav": ["a"]])
        let refusals: [TagUpdate.Operation] = [.set([.string(over)]), .set(.string(over)), .append([over])]
        for operation in refusals {
            let error = #expect(throws: StoreError.self) {
                try store.setTags(app: "APP-1", hwid: "H2", attributes: DeviceAttributes(),
                                  updates: [TagUpdate(name: "Fav", operation: operation)], now: 200)
            }
            #expect(error?.description == "tags.Fav: list items must be at most 1024 bytes long", "\(operation)")
        }
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil) == ["Fav": .list([longest])])
        #expect(try store.getTags(app: "APP-1", hwid: "H2", userID: nil) == ["Fav": .list(["a"])])
        #expect(throws: StoreError.self) {
            try store.registerDevice(
                DeviceRegistration(app: "APP-1", hwid: "H3", pushToken: "tok", gateway: nil, attributes: DeviceAttributes(platform: 1),
                                   tags: [TagUpdate(name: "Fav", operation: .set([.string(over)]))]), now: 100)
        }
        #expect(try store.device(app: "APP-1", hwid: "H3") == nil)
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

        // A browser's subscription keys go with its endpoint: nothing that can reach it is left.
        try store.registerDevice(
            DeviceRegistration(app: "APP-1", hwid: "W1", pushToken: "https://push.example/w1", gateway: nil,
                               webKeys: WebPushKeys(p256dh: "BKey", auth: "Auth"), attributes: DeviceAttributes(platform: Platform.chrome),
                               tags: try TagUpdate.parse(["Level": 4])), now: 100)
        try store.unregisterDevice(app: "APP-1", hwid: "W1", now: 300)
        #expect(try fixture.count("""
            SELECT count(*) FROM devices WHERE hwid = 'W1' AND push_token IS NULL AND web_p256dh IS NULL AND web_auth IS NULL
            """) == 1)
        #expect(try store.getTags(app: "APP-1", hwid: "W1", userID: nil)["Level"] == .integer(4))
    }

    func deleteForgetsTheDeviceAndKeepsItsIDFromOthers() throws {
        try register("H1", tags: ["Level": 3, "Fav": ["a", "b"]])
        try register("H2", tags: ["Level": 5])
        try store.registerUser(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), userID: "alice", now: 150)
        try store.setActivityToken(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), activityID: "order-1", token: "act-1", now: 160)
        #expect(try store.deleteDevice(app: "APP-2", hwid: "H1", now: 300) == false, "another application's device is not touched")
        #expect(try store.deleteDevice(app: "APP-1", hwid: "H1", now: 300))

        #expect(try store.device(app: "APP-1", hwid: "H1") == nil)
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil).isEmpty)
        #expect(try store.getTags(app: "APP-1", hwid: nil, userID: "alice").isEmpty)
        #expect(try store.activityTokens(app: "APP-1", hwid: "H1").isEmpty)
        // Nothing that named the device or its user is left; its row stays, anonymous.
        #expect(try fixture.count("SELECT count(*) FROM device_tags") == 1)
        #expect(try fixture.count("SELECT count(*) FROM device_tag_items") == 0)
        #expect(try fixture.count("SELECT count(*) FROM live_activity_tokens") == 0)
        #expect(try fixture.count("""
            SELECT count(*) FROM devices WHERE hwid LIKE 'deleted:%' AND push_token IS NULL AND user_id IS NULL AND language IS NULL
              AND timezone_offset IS NULL AND gateway IS NULL
            """) == 1)
        // The other device is as it was.
        #expect(try store.getTags(app: "APP-1", hwid: "H2", userID: nil) == ["Level": .integer(5)])
        #expect(try store.device(app: "APP-1", hwid: "H2")?.pushToken == "tok")

        // A second delete finds nothing; registering the hwid again starts a new device with a new id.
        #expect(try store.deleteDevice(app: "APP-1", hwid: "H1", now: 310) == false)
        try register("H1")
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil).isEmpty)
        #expect(try store.device(app: "APP-1", hwid: "H1")?.userID == nil)
        #expect(try fixture.count("SELECT count(*) FROM devices") == 3)
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

    func tagsByUserGoToEveryDeviceAndTheNewestValueWins() throws {
        try register("H1", tags: ["City": "Lyon", "Fav": ["a"]])
        try register("H2", tags: ["City": "Nice"])
        try register("H3", tags: ["City": "Oslo"])
        try store.registerUser(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), userID: "bob", now: 200)
        try store.registerUser(app: "APP-1", hwid: "H2", attributes: DeviceAttributes(), userID: "bob", now: 300)
        // Per tag, the value of the most recently updated device that has it.
        #expect(try store.getTags(app: "APP-1", hwid: nil, userID: "bob") == ["City": .string("Nice"), "Fav": .list(["a"])])
        let updated = try store.setUserTags(app: "APP-1", userID: "bob",
                                            updates: try TagUpdate.parse(["Level": 4, "Fav": ["operation": "append", "value": ["b"]]]), now: 400)
        #expect(updated == 2)
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil)["Fav"] == .list(["a", "b"]))
        #expect(try store.getTags(app: "APP-1", hwid: "H2", userID: nil) == ["City": .string("Nice"), "Level": .integer(4), "Fav": .list(["b"])])
        #expect(try store.getTags(app: "APP-1", hwid: "H3", userID: nil) == ["City": .string("Oslo")])
        // A value one device cannot take changes none of them.
        #expect(throws: StoreError.self) {
            try store.setUserTags(app: "APP-1", userID: "bob", updates: try TagUpdate.parse(["City": "Rome", "Level": "high"]), now: 500)
        }
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil)["City"] == .string("Lyon"))
        #expect(try store.setUserTags(app: "APP-1", userID: "nobody", updates: try TagUpdate.parse(["Level": 1]), now: 500) == 0)
        #expect(try store.setUserTags(app: "APP-2", userID: "bob", updates: try TagUpdate.parse(["Level": 1]), now: 500) == 0)
    }

    func addAndDeleteTags() throws {
        #expect(try store.addTag(app: "APP-1", name: "Tier", type: .integer, now: 1) == nil)
        #expect(try store.addTag(app: "APP-1", name: "Tier", type: .string, now: 2) == .integer)
        #expect(try store.addTag(app: "APP-2", name: "Tier", type: .string, now: 2) == nil)
        // The defined type decides how values are taken.
        #expect(throws: StoreError.self) { try register("H1", tags: ["Tier": "gold"]) }
        try register("H1", tags: ["Tier": 2, "Fav": ["a", "b"], "City": "Lyon"])
        try register("H2", tags: ["Tier": 3, "Fav": ["c"]])
        try register("H1", app: "APP-2", tags: ["Tier": "gold", "Fav": ["a"]])
        #expect(try store.deleteTag(app: "APP-1", name: "Fav"))
        #expect(try store.deleteTag(app: "APP-1", name: "Tier"))
        #expect(try !store.deleteTag(app: "APP-1", name: "Tier"))
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil) == ["City": .string("Lyon")])
        #expect(try store.getTags(app: "APP-1", hwid: "H2", userID: nil).isEmpty)
        #expect(try store.getTags(app: "APP-2", hwid: "H1", userID: nil) == ["Tier": .string("gold"), "Fav": .list(["a"])])
        // Once deleted, the name is free for another type.
        try register("H2", tags: ["Tier": "silver"])
        #expect(try store.getTags(app: "APP-1", hwid: "H2", userID: nil) == ["Tier": .string("silver")])
        #expect(try store.addTag(app: "APP-1", name: "Tier", type: .integer, now: 3) == .string)
    }

    func bulkTagJobsApplyChunksAndRecordEntryErrors() throws {
        try register("H1", token: "tok-1", tags: ["Fav": ["a"]])
        try register("H2", token: "tok-2", tags: ["Level": 1])
        try store.registerUser(app: "APP-1", hwid: "H2", attributes: DeviceAttributes(), userID: "dora", now: 110)
        try store.createBulkTagJob(id: "job-1", app: "APP-1", createMissingTags: false, devices: "[1, 2, 3, 4, 5]", total: 5, now: 120)
        let pending = try #require(try store.unfinishedBulkTagJobs().first)
        #expect(pending.devices == "[1, 2, 3, 4, 5]" && pending.job.status == .pending && pending.job.total == 5)
        let job = pending.job
        let first = [
            BulkTagEntry(device: .hwid("H1"), updates: [TagUpdate(name: "Fav", operation: .append(["b"]))]),
            BulkTagEntry(device: .hwid("nobody"), updates: [TagUpdate(name: "Level", operation: .set(2))]),
            BulkTagEntry(device: .userID("dora"), updates: [TagUpdate(name: "Level", operation: .set(5))]),
        ]
        #expect(try store.applyBulkTags(job: job, from: 0, entries: first, now: 130))
        // The same chunk again (another process, or a retry after a lost reply) changes nothing.
        #expect(try !store.applyBulkTags(job: job, from: 0, entries: first, now: 131))
        let (middle, _) = try #require(try store.bulkTagJob(id: "job-1", errorLimit: 10))
        #expect(middle.status == .processing && middle.processed == 3 && middle.failed == 1)
        let second = [
            // A bad value and an undefined tag (create_missing_tags false) fail their entry alone, wholly.
            BulkTagEntry(device: .pushToken("tok-2"), updates: [TagUpdate(name: "City", operation: .set("Oslo")),
                                                                TagUpdate(name: "Level", operation: .set("high"))]),
            BulkTagEntry(device: .pushToken("tok-1"), updates: [TagUpdate(name: "New", operation: .set(1))]),
        ]
        #expect(try store.applyBulkTags(job: job, from: 3, entries: second, now: 140))
        let (done, errors) = try #require(try store.bulkTagJob(id: "job-1", errorLimit: 10))
        #expect(done.status == .completed && done.processed == 5 && done.failed == 3 && done.updatedAt == 140)
        #expect(errors.map(\.index) == [1, 3, 4] && errors.map(\.field) == ["hwid", "push_token", "push_token"])
        #expect(errors[0].value == "nobody" && errors[0].message == "device not found")
        #expect(errors[2].message.contains("tag New is not defined"))
        #expect(try store.bulkTagJob(id: "job-1", errorLimit: 1)?.1.count == 1)
        #expect(try store.unfinishedBulkTagJobs().isEmpty)
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil) == ["Fav": .list(["a", "b"])])
        #expect(try store.getTags(app: "APP-1", hwid: "H2", userID: nil) == ["Level": .integer(5)])
        // create_missing_tags true defines tags as their first value does; a failed job says why.
        try store.createBulkTagJob(id: "job-2", app: "APP-1", createMissingTags: true, devices: "[]", total: 1, now: 150)
        let next = try #require(try store.unfinishedBulkTagJobs().first?.job)
        #expect(try store.applyBulkTags(job: next, from: 0, entries: [
            BulkTagEntry(device: .hwid("H1"), updates: [TagUpdate(name: "New", operation: .set(1))]),
        ], now: 160))
        #expect(try store.getTags(app: "APP-1", hwid: "H1", userID: nil)["New"] == .integer(1))
        try store.createBulkTagJob(id: "job-3", app: "APP-1", createMissingTags: true, devices: "{", total: 1, now: 170)
        try store.failBulkTagJob(id: "job-3", reason: "unreadable", now: 171)
        let (failed, _) = try #require(try store.bulkTagJob(id: "job-3", errorLimit: 10))
        #expect(failed.status == .failed && failed.failure == "unreadable")
        #expect(try store.bulkTagJob(id: "job-4", errorLimit: 10) == nil)
        // Retention: finished jobs last updated before the bound go with their errors, oldest first;
        // a job still running stays whatever its age.
        try store.createBulkTagJob(id: "job-5", app: "APP-1", createMissingTags: false, devices: "[]", total: 1, now: 100)
        #expect(try store.pruneBulkTagJobs(finishedBefore: 140, limit: 10) == 0, "job-1 finished at 140")
        #expect(try store.pruneBulkTagJobs(finishedBefore: 161, limit: 1) == 1)
        #expect(try store.bulkTagJob(id: "job-1", errorLimit: 10) == nil)
        #expect(try fixture.count("SELECT count(*) FROM bulk_tag_errors") == 0)
        #expect(try store.pruneBulkTagJobs(finishedBefore: 1_000, limit: 10) == 2)
        #expect(try store.unfinishedBulkTagJobs().map(\.job.id) == ["job-5"])
        #expect(try fixture.count("SELECT count(*) FROM bulk_tag_jobs") == 1)
    }

    /// A chunk mixing entries that set known tags by hwid (which PostgreSQL writes many per
    /// statement) with entries that need reading, a device's second entry and bad ones: every entry
    /// lands as if applied alone in order, and each bad one fails alone.
    func bulkTagEntriesApplyInOrder() throws {
        for index in 0..<6 { try register("B\(index)", token: "tok-\(index)", tags: ["Level": 1, "City": "Oslo"]) }
        try store.createBulkTagJob(id: "job-order", app: "APP-1", createMissingTags: false, devices: "[]", total: 8, now: 200)
        let job = try #require(try store.unfinishedBulkTagJobs().first?.job)
        let entries = [
            BulkTagEntry(device: .hwid("B0"), updates: [TagUpdate(name: "Level", operation: .set(2)), TagUpdate(name: "City", operation: .set("Rome"))]),
            BulkTagEntry(device: .hwid("B1"), updates: [TagUpdate(name: "Level", operation: .set(3))]),
            // The same device again: after the first entry, so it sees Level 2.
            BulkTagEntry(device: .hwid("B0"), updates: [TagUpdate(name: "Level", operation: .increment(5))]),
            BulkTagEntry(device: .hwid("B2"), updates: [TagUpdate(name: "Level", operation: .set("high"))]),
            BulkTagEntry(device: .hwid("gone"), updates: [TagUpdate(name: "Level", operation: .set(4))]),
            BulkTagEntry(device: .hwid("B0"), updates: [TagUpdate(name: "City", operation: .set("Nice"))]),
            BulkTagEntry(device: .pushToken("tok-3"), updates: [TagUpdate(name: "Level", operation: .set(9))]),
            BulkTagEntry(device: .hwid("B4"), updates: [TagUpdate(name: "City", operation: .set("Lima"))]),
        ]
        #expect(try store.applyBulkTags(job: job, from: 0, entries: entries, now: 210))
        let (done, errors) = try #require(try store.bulkTagJob(id: "job-order", errorLimit: 10))
        #expect(done.status == .completed && done.processed == 8 && done.failed == 2)
        #expect(errors.map(\.index) == [3, 4] && errors.map(\.value) == ["B2", "gone"] && errors[1].message == "device not found")
        #expect(try store.getTags(app: "APP-1", hwid: "B0", userID: nil) == ["Level": .integer(7), "City": .string("Nice")])
        #expect(try store.getTags(app: "APP-1", hwid: "B1", userID: nil) == ["Level": .integer(3), "City": .string("Oslo")])
        #expect(try store.getTags(app: "APP-1", hwid: "B2", userID: nil) == ["Level": .integer(1), "City": .string("Oslo")])
        #expect(try store.getTags(app: "APP-1", hwid: "B3", userID: nil) == ["Level": .integer(9), "City": .string("Oslo")])
        #expect(try store.getTags(app: "APP-1", hwid: "B4", userID: nil) == ["Level": .integer(1), "City": .string("Lima")])
        #expect(try store.device(app: "APP-1", hwid: "gone") == nil)
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
