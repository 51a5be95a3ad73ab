import Foundation
import Synchronization
import Testing
import Core
@testable import Postgres
import TestSupport

/// Concurrent registrations written many per statement end as if each had been written alone.
@Suite struct DeviceWriteBatcherTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
    let database: PostgresDatabase
    let store: PostgresDeviceStore

    init() throws {
        database = try PostgresDatabase(settings: PostgresConnectionSettings(url: try PostgresServer.shared().makeSchema()), poolSize: 4,
                                        acquireTimeoutMilliseconds: 10_000, apps: Self.apps)
        store = PostgresDeviceStore(database: database)
    }

    func registration(_ hwid: String, token: String, level: Int, platform: Int = 3) throws -> DeviceRegistration {
        DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: token, gateway: nil, attributes: DeviceAttributes(platform: platform, language: "en"),
                           tags: try TagUpdate.parse(["Level": .int(Int64(level)), "City": "Lyon"]))
    }

    @Test func concurrentRegistrationsLandAsIfAlone() throws {
        // The first registration defines the tags (the ordinary path); the rest can be batched.
        try store.registerDevice(try registration("seed", token: "t-seed", level: 0), now: 1)
        let failures = Atomic<Int>(0)
        let store = self.store
        #expect(runConcurrently(16) { thread in
            for round in 0..<3 {
                for index in 0..<40 {
                    // Every thread registers its own devices three times (new, then changed twice) and
                    // one device all threads share.
                    let hwid = index == 0 ? "shared" : "d-\(thread)-\(index)"
                    let request = try? DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "t-\(thread)-\(index)-\(round)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 3, language: "en"),
                                                          tags: TagUpdate.parse(["Level": .int(Int64(round)), "City": "Lyon"]))
                    guard let request, (try? store.registerDevice(request, now: Int64(round + 2))) != nil else {
                        failures.add(1, ordering: .relaxed)
                        continue
                    }
                }
            }
        })
        #expect(failures.load(ordering: .relaxed) == 0)
        for thread in 0..<16 {
            for index in [1, 17, 39] {
                let device = try #require(try store.device(app: "APP-1", hwid: "d-\(thread)-\(index)"))
                #expect(device.pushToken == "t-\(thread)-\(index)-2" && device.platform == 3 && device.language == "en")
                #expect(try store.getTags(app: "APP-1", hwid: "d-\(thread)-\(index)", userID: nil) == ["Level": .integer(2), "City": .string("Lyon")])
            }
        }
        #expect(try store.getTags(app: "APP-1", hwid: "shared", userID: nil)["Level"] == .integer(2))
        // Re-registering never drew sequence values: the ids stay dense.
        let connection = try PostgresConnection(database.pool.settings)
        let (count, span) = try #require(try connection.first("SELECT count(*), max(id) - min(id) + 1 FROM devices") { ($0.int(0), $0.int(1)) })
        #expect(count == 1 + 1 + 16 * 39 && span <= count + 16, "\(count) devices over \(span) ids")
        // Every device opted in when it was created and stayed in: one history row each.
        #expect(try connection.first("SELECT count(*), count(DISTINCT device_id) FILTER (WHERE registered AND opted_in) FROM permission_changes") {
            [$0.int(0), $0.int(1)]
        } == [count, count])
    }

    /// The opt-in history of one device's registrations, unregistration and unsubscription (its
    /// time, app version, whether opted in, and whether it was the device's first row), in order.
    func history(_ hwid: String) throws -> [String] {
        let connection = try PostgresConnection(database.pool.settings)
        return try connection.rows(
            """
            SELECT p.at, p.app_version, p.opted_in, p.registered FROM permission_changes p JOIN devices d ON d.id = p.device_id
            WHERE d.hwid = $1 ORDER BY p.id
            """, [.text(hwid)]) { "\($0.int(0)) \($0.optionalText(1) ?? "-") \($0.bool(2) ? "in" : "out")\($0.bool(3) ? " registered" : "")" }
    }

    /// Batched registrations write the opt-in history the ordinary path writes: the same rows, in
    /// the same order, for a new device, a token change, an unregistration, a token again, a
    /// permission withdrawn and granted again, and an unsubscription followed by a registration.
    @Test func batchedRegistrationsWriteTheOptInHistoryOfTheOrdinaryPath() throws {
        try store.registerDevice(try registration("seed", token: "t-seed", level: 0), now: 1)
        // "batched" sets a tag of a known type (batched); "alone" deletes one, which only the ordinary path does.
        for (hwid, tags) in [("batched", ["Level": JSON.int(1)]), ("alone", ["Gone": JSON.null])] {
            func register(_ token: String, types: Int64, version: String? = nil, at now: Int64) throws {
                try store.registerDevice(DeviceRegistration(
                    app: "APP-1", hwid: hwid, pushToken: token, gateway: nil,
                    attributes: DeviceAttributes(platform: 1, appVersion: version, notificationTypes: types), tags: TagUpdate.parse(tags)), now: now)
            }
            try register("t1", types: 7, version: "1.0", at: 10)
            try register("t2", types: 7, at: 20)
            try store.unregisterDevice(app: "APP-1", hwid: hwid, now: 30)
            try register("t3", types: 7, at: 40)
            try register("t3", types: 0, at: 50)
            try register("t3", types: 6, version: "1.1", at: 60)
            try store.setSubscribed(app: "APP-1", hwid: hwid, subscribed: false, now: 70)
            try register("t3", types: 6, at: 80)
        }
        #expect(try history("batched") == ["10 1.0 in registered", "30 1.0 out", "40 1.0 in", "50 1.0 out", "60 1.1 in", "70 1.1 out", "80 1.1 in"])
        #expect(try history("alone") == history("batched"))
    }

    /// A batched registration whose device another transaction inserts meanwhile updates that
    /// device once it commits (ON CONFLICT): the history holds the other insert's row, then the
    /// registration's change, as when the registration comes second on its own.
    @Test func aRegistrationRacingAnInsertOfItsDeviceRecordsItsChange() throws {
        try store.registerDevice(try registration("seed", token: "t-seed", level: 0), now: 1)
        let other = try PostgresConnection(database.pool.settings)
        let otherBackend = try #require(try other.first("SELECT pg_backend_pid()") { $0.int(0) })
        try other.execute("BEGIN")
        try other.run("INSERT INTO devices (app_id, hwid, platform, created_at, updated_at) VALUES ($1, 'raced', 1, 5, 5)",
                      [.integer(try database.appID("APP-1"))])
        // With a tag of its own, which the registration's tags must overwrite, not insert again.
        try other.run("INSERT INTO device_tags (device_id, name, app_id, type, str) SELECT id, 'City', app_id, $1, 'Paris' FROM devices WHERE hwid = 'raced'",
                      [.integer(Int64(TagType.string.rawValue))])
        let store = self.store, request = try registration("raced", token: "t-raced", level: 3)
        let outcome = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var answer = "ok"
            do {
                try store.registerDevice(request, now: 6)
            } catch {
                answer = "\(error)"
            }
            outcome.withLock { [answer] in $0 = answer }
            done.signal()
        }.start()
        // The batch's insert waits for the uncommitted one of the same device (checked for at most 10 s).
        let watcher = try PostgresConnection(database.pool.settings)
        var blocked = false
        for _ in 0..<100 where !blocked {
            blocked = try watcher.first("SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
                                        [.integer(otherBackend)]) { $0.int(0) } == 1
            if !blocked { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(blocked)
        try other.execute("COMMIT")
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(outcome.withLock { $0 } == "ok")
        #expect(try store.device(app: "APP-1", hwid: "raced")?.pushToken == "t-raced")
        #expect(try store.getTags(app: "APP-1", hwid: "raced", userID: nil) == ["Level": .integer(3), "City": .string("Lyon")])
        #expect(try history("raced") == ["5 - out registered", "6 - in"])
    }

    @Test func aRegistrationTheDatabaseRefusesFailsAloneInItsBatch() throws {
        try store.registerDevice(try registration("seed", token: "t-seed", level: 0), now: 1)
        let failures = Mutex<[String]>([])
        let store = self.store
        // A hwid too large for its index entry, among good registrations at the same moment.
        let huge = (0..<3_000).map { _ in String(UnicodeScalar(UInt8.random(in: 65...90))) }.joined()
        #expect(runConcurrently(8) { thread in
            for index in 0..<10 {
                let hwid = thread == 3 && index == 5 ? huge : "ok-\(thread)-\(index)"
                let request = try? DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "t", gateway: nil,
                                                      attributes: DeviceAttributes(platform: 1), tags: TagUpdate.parse(["Level": 1]))
                do {
                    try store.registerDevice(request!, now: 2)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        })
        let failed = failures.withLock { $0 }
        #expect(failed.count == 1 && failed.first?.contains("too long") == true, "\(failed)")
        #expect(try store.device(app: "APP-1", hwid: "ok-3-4") != nil && store.device(app: "APP-1", hwid: "ok-7-9") != nil)
    }

    /// Requests handed to the backend run on the batcher's thread: each is answered only once what
    /// it wrote is committed, with the answer it would have had on its own, whether its work was a
    /// batchable registration, another store call (run again on a request thread), or a
    /// registration the database refuses.
    @Test func requestsAreAnsweredAfterTheirCommitWithTheirOwnResult() throws {
        let backend = try PostgresRestartTests.backend(url: try PostgresServer.shared().makeSchema())
        let devices = backend.devices
        try devices.registerDevice(try registration("seed", token: "t-seed", level: 0), now: 1)
        // Too large for its index entry (random, so that it does not compress).
        let huge = (0..<3_000).map { _ in String(UnicodeScalar(UInt8.random(in: 65...90))) }.joined()
        // Per request: the answer, and whether its device was readable when it was answered.
        let answers = Mutex<[Int: (String, Bool)]>([:])
        let done = DispatchGroup()
        for index in 0..<60 {
            let hwid = index == 7 ? huge : "r-\(index)"
            // Every fifth request reads instead, and every seventh registers a tag not yet defined
            // (which the batch cannot write): both run again on a request thread.
            let tags: [String: JSON] = index % 7 == 3 ? ["Fresh\(index)": "new"] : ["Level": .int(Int64(index))]
            let request = try DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "t-\(index)", gateway: nil,
                                                 attributes: DeviceAttributes(platform: 1), tags: TagUpdate.parse(tags))
            done.enter()
            backend.submitRequest({
                do {
                    if index % 5 == 4 { return "tags \(try devices.getTags(app: "APP-1", hwid: "seed", userID: nil).count)" }
                    try devices.registerDevice(request, now: 2)
                    return "registered"
                } catch {
                    return "\(error)"
                }
            }, onFailure: { "503" }, completion: { answer in
                let visible = index % 5 == 4 || index == 7 || (try? devices.device(app: "APP-1", hwid: hwid)) != nil
                answers.withLock { $0[index] = (answer, visible) }
                done.leave()
            })
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        let seen = answers.withLock { $0 }
        #expect(seen.count == 60)
        for (index, (answer, visible)) in seen.sorted(by: { $0.key < $1.key }) {
            if index % 5 == 4 {
                #expect(answer == "tags 2", "request \(index)")
            } else if index == 7 {
                #expect(answer.contains("too long"), "request \(index): \(answer)")
            } else {
                #expect(answer == "registered" && visible, "request \(index): \(answer), visible \(visible)")
            }
        }
        #expect(try devices.getTags(app: "APP-1", hwid: "r-3", userID: nil) == ["Fresh3": .string("new")])
        #expect(try devices.getTags(app: "APP-1", hwid: "r-11", userID: nil) == ["Level": .integer(11)])
    }

    /// setTags calls batched with registrations, many for the same devices and submitted without
    /// waiting: each device ends with its last call's value (its writes committed in the order they
    /// came, though two batches are in flight at once), and one for a device never registered fails
    /// alone with the error it gets on its own, writing nothing.
    @Test func batchedSetTagsKeepEachDevicesOrder() throws {
        let backend = try PostgresRestartTests.backend(url: try PostgresServer.shared().makeSchema())
        let devices = backend.devices
        for device in 0..<4 { try devices.registerDevice(try registration("o-\(device)", token: "t-\(device)", level: 0), now: 1) }
        let count = 400
        let seen = try Self.submitAll(backend, count: count) { index in
            let hwid = index == 150 ? "never-registered" : "o-\(index % 4)"
            let updates = try TagUpdate.parse(["Level": .int(Int64(index)), "City": .string("c\(index)")])
            return { try devices.setTags(app: "APP-1", hwid: hwid, attributes: DeviceAttributes(), updates: updates, now: 2) }
        }
        for (index, answer) in seen.sorted(by: { $0.key < $1.key }) {
            if index == 150 {
                #expect(answer.contains("register it first"), "request \(index): \(answer)")
            } else {
                #expect(answer == "ok", "request \(index): \(answer)")
            }
        }
        for device in 0..<4 {
            let last = count - 4 + device
            #expect(try devices.getTags(app: "APP-1", hwid: "o-\(device)", userID: nil) == ["Level": .integer(Int64(last)), "City": .string("c\(last)")])
        }
        #expect(try devices.device(app: "APP-1", hwid: "never-registered") == nil)
    }

    /// A burst of postEvent reports submitted without waiting, as herald-ingest submits them: every
    /// one is answered after its commit and stored once, each device's in the order they came, many
    /// per transaction (rows written by one transaction share its `xmin`); one the database refuses
    /// fails alone, and nothing of it is stored.
    @Test func aBurstOfReportsLandsInSharedCommitsAndABadOneFailsAlone() throws {
        let url = try PostgresServer.shared().makeSchema()
        let backend = try PostgresRestartTests.backend(url: url)
        let devices = backend.devices
        // Too large for its index entry (random, so that it does not compress).
        let huge = (0..<3_000).map { _ in String(UnicodeScalar(UInt8.random(in: 65...90))) }.joined()
        let count = 400, bad = 217
        let seen = try Self.submitAll(backend, count: count) { index in
            let report = SDKReport(kind: .event, app: "APP-1", hwid: "p-\(index % 8)", userID: nil, platform: 3,
                                   name: index == bad ? huge : "e\(index)", hash: nil, body: ["n": .int(Int64(index))],
                                   timestampUTC: nil, timestampCurrent: nil)
            return { try devices.record([report], now: 2) }
        }
        for (index, answer) in seen.sorted(by: { $0.key < $1.key }) {
            if index == bad {
                #expect(answer.contains("too long"), "request \(index): \(answer)")
            } else {
                #expect(answer == "ok", "request \(index): \(answer)")
            }
        }
        let reports = try devices.reports(app: "APP-1", limit: 10_000)
        #expect(reports.count == count - 1)
        for device in 0..<8 {
            let expected = (0..<count).filter { $0 % 8 == device && $0 != bad }.map { "e\($0)" }
            #expect(reports.filter { $0.hwid == "p-\(device)" }.map(\.name) == expected, "p-\(device)")
        }
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        let transactions = try #require(try connection.first("SELECT count(DISTINCT xmin::text) FROM reports") { $0.int(0) })
        #expect(transactions < Int64(count - 1), "\(count - 1) reports in \(transactions) transactions")
    }

    /// `call` fails with a retryable backend error (the answer was lost: outcome unknown).
    static func expectOutcomeUnknown(_ call: () throws -> Void) throws {
        let error = #expect(throws: StoreError.self) { try call() }
        guard case .backend(let failure)? = error else {
            Issue.record("expected a backend failure, got \(String(describing: error))")
            return
        }
        #expect(failure.isRetryable, "\(failure)")
    }

    /// An increment (integer or decimal) in a batch whose reply is lost (the server committed, the
    /// answer never came) is not made again: the caller is told the outcome is unknown (a retryable
    /// error, 503), and the increment counts once.
    @Test(arguments: [("Visits", JSON.int(1), TagValue.integer(3)), ("Score", JSON.double(0.25), TagValue.decimal(0.75))])
    func anIncrementWhoseReplyIsLostCountsOnce(tag: String, step: JSON, total: TagValue) throws {
        let server = try PostgresServer.shared()
        let proxy = try ReplyDroppingProxy(to: server.port)
        let url = try server.makeSchema().replacingOccurrences(of: ":\(server.port)/", with: ":\(proxy.port)/")
        let backend = try PostgresRestartTests.backend(url: url) { $0.poolSize = 1 }
        let devices = backend.devices
        try devices.registerDevice(try registration("counted", token: "t", level: 0), now: 1)
        let increment = try TagUpdate.parse([tag: ["operation": "increment", "value": step]])
        // The first use defines the tag on the ordinary path; the next ones are batched.
        for _ in 0..<2 { try devices.setTags(app: "APP-1", hwid: "counted", attributes: DeviceAttributes(), updates: increment, now: 2) }
        proxy.dropNextReply()
        try Self.expectOutcomeUnknown {
            try devices.setTags(app: "APP-1", hwid: "counted", attributes: DeviceAttributes(), updates: increment, now: 3)
        }
        #expect(proxy.dropped)
        let stored = try devices.getTags(app: "APP-1", hwid: "counted", userID: nil)[tag]
        #expect(stored == total, "three increments of \(step) came to \(String(describing: stored))")
    }

    /// The SDKs' session writes submitted without waiting, many for the same devices: registrations
    /// with a user, setTags with device attributes, a list tag and an increment, applicationOpen and
    /// postEvent all join the batches, and each device ends as its writes in the order they came
    /// left it (its last tags, list items, attributes and open time, every increment counted once;
    /// its reports in order). A report the database refuses, an increment that overflows and an
    /// applicationOpen of a device never registered fail alone; a setTags naming the platform of a
    /// device not seen yet creates it, as on its own.
    @Test func sessionWritesKeepEachDevicesOrderAndABadOneFailsAlone() throws {
        let url = try PostgresServer.shared().makeSchema()
        let backend = try PostgresRestartTests.backend(url: url)
        let devices = backend.devices
        // The first use of each tag defines its type (the ordinary path); later ones are batched.
        try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "seed", pushToken: "t", gateway: nil,
                                                      attributes: DeviceAttributes(platform: 1),
                                                      tags: TagUpdate.parse(["Level": 0, "Interests": ["a"], "Visits": 0])), now: 1)
        // Too large for its index entry (random, so that it does not compress).
        let huge = (0..<3_000).map { _ in String(UnicodeScalar(UInt8.random(in: 65...90))) }.joined()
        let count = 400
        func hwid(_ index: Int) -> String { "s-\(index % 4)" }
        func interests(_ index: Int) -> [JSON] { [.string("i\(index)"), "common"] }
        func work(_ index: Int) throws -> @Sendable () throws -> Void {
            let hwid = hwid(index), user = "u-\(index % 4)"
            switch index {
            case 0..<4:
                let registration = try DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "t-\(index)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 3, userID: user),
                                                          tags: TagUpdate.parse(["Level": .int(Int64(index))]))
                return { try devices.registerDevice(registration, now: 2) }
            case 150:
                let report = SDKReport(kind: .event, app: "APP-1", hwid: hwid, userID: nil, platform: 3, name: huge, hash: nil,
                                       body: [:], timestampUTC: nil, timestampCurrent: nil)
                return { try devices.record([report], now: 2) }
            case 151:
                return { try devices.applicationOpen(app: "APP-1", hwid: "never-registered", attributes: DeviceAttributes(), now: 2) }
            case 153:
                let updates = try TagUpdate.parse(["Visits": ["operation": "increment", "value": .int(Int64.max)]])
                return { try devices.setTags(app: "APP-1", hwid: hwid, attributes: DeviceAttributes(), updates: updates, now: 2) }
            case 152:
                let updates = try TagUpdate.parse(["Level": 152])
                return {
                    try devices.setTags(app: "APP-1", hwid: "new-by-tags", attributes: DeviceAttributes(platform: 1), updates: updates, now: 2)
                }
            default:
                switch index % 3 {
                case 0:
                    let updates = try TagUpdate.parse(["Level": .int(Int64(index)), "Interests": .array(interests(index)),
                                                       "Visits": ["operation": "increment", "value": 1]])
                    let attributes = DeviceAttributes(platform: 3, sdkVersion: "6.\(index)", userID: user)
                    return { try devices.setTags(app: "APP-1", hwid: hwid, attributes: attributes, updates: updates, now: 2) }
                case 1:
                    let attributes = DeviceAttributes(platform: 3, appVersion: "1.\(index)")
                    return { try devices.applicationOpen(app: "APP-1", hwid: hwid, attributes: attributes, now: Int64(1_000 + index)) }
                default:
                    let report = SDKReport(kind: .event, app: "APP-1", hwid: hwid, userID: user, platform: 3, name: "e\(index)", hash: nil,
                                           body: ["n": .int(Int64(index))], timestampUTC: nil, timestampCurrent: nil)
                    return { try devices.record([report], now: 2) }
                }
            }
        }
        let seen = try Self.submitAll(backend, count: count, work)
        for (index, answer) in seen.sorted(by: { $0.key < $1.key }) {
            switch index {
            case 150: #expect(answer.contains("too long"), "request \(index): \(answer)")
            case 151: #expect(answer.contains("register it first"), "request \(index): \(answer)")
            case 153: #expect(answer.contains("overflows"), "request \(index): \(answer)")
            default: #expect(answer == "ok", "request \(index): \(answer)")
            }
        }
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        let reports = try devices.reports(app: "APP-1", limit: 10_000)
        for device in 0..<4 {
            let mine = (4..<count).filter { $0 % 4 == device && ![150, 151, 152, 153].contains($0) }
            let lastTags = try #require(mine.last { $0 % 3 == 0 }), lastOpen = try #require(mine.last { $0 % 3 == 1 })
            #expect(try devices.getTags(app: "APP-1", hwid: "s-\(device)", userID: nil)
                == ["Level": .integer(Int64(lastTags)), "Interests": .list(["i\(lastTags)", "common"]),
                    "Visits": .integer(Int64(mine.filter { $0 % 3 == 0 }.count))])
            let items = try connection.rows(
                "SELECT i.item FROM device_tag_items i JOIN devices d ON d.id = i.device_id WHERE d.hwid = $1 ORDER BY i.item",
                [.text("s-\(device)")]) { $0.text(0) }
            #expect(items == ["common", "i\(lastTags)"])
            let record = try #require(try devices.device(app: "APP-1", hwid: "s-\(device)"))
            #expect(record.sdkVersion == "6.\(lastTags)" && record.appVersion == "1.\(lastOpen)" && record.lastOpenAt == Int64(1_000 + lastOpen)
                && record.userID == "u-\(device)" && record.pushToken == "t-\(device)")
            let events = reports.filter { $0.hwid == "s-\(device)" }.map(\.name)
            #expect(events == mine.filter { $0 % 3 == 2 }.map { "e\($0)" })
        }
        let users = try connection.rows("SELECT user_id FROM users ORDER BY user_id") { $0.text(0) }
        #expect(users == ["u-0", "u-1", "u-2", "u-3"])
        #expect(try devices.device(app: "APP-1", hwid: "never-registered") == nil)
        #expect(try devices.getTags(app: "APP-1", hwid: "new-by-tags", userID: nil) == ["Level": .integer(152)])
    }

    /// setTags calls that append to and remove from a list, increment a decimal and set the badge,
    /// and setBadge, submitted without waiting, many for the same devices: they join the batches,
    /// and each device ends exactly as the same calls applied one by one in order leave it
    /// (`TagRules.apply`, what the ordinary path does): its list with its items in order, each once,
    /// its decimal sum, its badge tag and column. An item over `TagRules.maxListItemBytes` is
    /// refused before it joins a batch; an append to an integer tag fails alone; a decimal
    /// increment beyond double, which fails its batch, is answered as it is alone.
    @Test func listEditsDecimalIncrementsAndBadgesKeepEachDevicesOrder() throws {
        let url = try PostgresServer.shared().makeSchema()
        let backend = try PostgresRestartTests.backend(url: url)
        let devices = backend.devices
        let initial: [String: JSON] = ["Interests": ["a"], "Score": .double(0.5), "Visits": 0]
        // The first use of each tag defines its type (the ordinary path); later ones are batched.
        try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "seed", pushToken: "t", gateway: nil,
                                                      attributes: DeviceAttributes(platform: 1), tags: TagUpdate.parse(initial)), now: 1)
        try devices.setBadge(app: "APP-1", hwid: "seed", attributes: DeviceAttributes(), badge: 1, now: 1)
        for hwid in ["m-0", "m-1", "m-2", "m-3", "big"] {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "t", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 1), tags: TagUpdate.parse(initial)), now: 1)
        }
        try devices.setTags(app: "APP-1", hwid: "big", attributes: DeviceAttributes(), updates: TagUpdate.parse(["Score": .double(1e308)]), now: 1)
        let huge = (0..<3_000).map { _ in String(UnicodeScalar(UInt8.random(in: 65...90))) }.joined()
        let count = 400
        let bad = [150, 151, 152]
        // Each call: its tag updates, or the badge setBadge sets.
        func call(_ index: Int) throws -> (hwid: String, updates: [TagUpdate], badge: Int64?) {
            switch index {
            case 150: return ("m-2", [TagUpdate(name: "Interests", operation: .append([huge]))], nil)
            case 151: return ("m-3", try TagUpdate.parse(["Visits": ["operation": "append", "value": ["x"]]]), nil)
            case 152: return ("big", try TagUpdate.parse(["Score": ["operation": "increment", "value": .double(1e308)]]), nil)
            default: break
            }
            let hwid = "m-\(index % 4)"
            switch index % 5 {
            case 0:
                // An item twice, and one every device's list already holds after its first append.
                return (hwid, try TagUpdate.parse(["Interests": ["operation": "append", "value": [.string("x\(index)"), "common", .string("x\(index)")]]]), nil)
            case 1:
                // The item appended four calls of this device ago, and one never appended.
                return (hwid, try TagUpdate.parse(["Interests": ["operation": "remove", "value": [.string("x\(index - 16)"), "absent"]]]), nil)
            case 2:
                return (hwid, try TagUpdate.parse(["Score": ["operation": "increment", "value": .double(0.1)],
                                                   "Visits": ["operation": "increment", "value": 1]]), nil)
            case 3:
                return (hwid, [], Int64(index))
            default:
                return (hwid, try TagUpdate.parse(["badge": .int(Int64(index)), "Interests": ["operation": "remove", "value": ["common", "a"]],
                                                   "Score": ["operation": "increment", "value": "-0.25"]]), nil)
            }
        }
        let seen = try Self.submitAll(backend, count: count) { index in
            let (hwid, updates, badge) = try call(index)
            if let badge {
                return { try devices.setBadge(app: "APP-1", hwid: hwid, attributes: DeviceAttributes(), badge: badge, now: 2) }
            }
            return { try devices.setTags(app: "APP-1", hwid: hwid, attributes: DeviceAttributes(), updates: updates, now: 2) }
        }
        for (index, answer) in seen.sorted(by: { $0.key < $1.key }) {
            switch index {
            case 150: #expect(answer == "tags.Interests: list items must be at most 1024 bytes long", "request \(index): \(answer)")
            case 151: #expect(answer.contains("append and remove need a list tag"), "request \(index): \(answer)")
            default: #expect(answer == "ok", "request \(index): \(answer)")
            }
        }
        // The same calls one by one, in order, as the ordinary path applies them.
        let types: [String: TagType] = ["Interests": .list, "Score": .decimal, "Visits": .integer, "badge": .integer]
        var expected = [String: [String: TagValue]]()
        for hwid in ["m-0", "m-1", "m-2", "m-3"] {
            expected[hwid] = ["Interests": .list(["a"]), "Score": .decimal(0.5), "Visits": .integer(0)]
        }
        for index in 0..<count where !bad.contains(index) {
            let (hwid, updates, badge) = try call(index)
            let all = badge.map { [TagUpdate(name: "badge", operation: .set(.int($0)))] } ?? updates
            for update in all {
                expected[hwid]![update.name] = try TagRules.apply(update.operation, name: update.name, to: expected[hwid]![update.name],
                                                                  type: types[update.name])
            }
        }
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        for (hwid, tags) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(try devices.getTags(app: "APP-1", hwid: hwid, userID: nil) == tags, "\(hwid)")
            guard case .list(let list)? = tags["Interests"], case .integer(let badge)? = tags["badge"] else {
                Issue.record("\(hwid): \(tags)")
                continue
            }
            let items = try connection.rows(
                "SELECT i.item FROM device_tag_items i JOIN devices d ON d.id = i.device_id WHERE d.hwid = $1 AND i.name = 'Interests' ORDER BY i.item",
                [.text(hwid)]) { $0.text(0) }
            #expect(items == list.sorted(), "\(hwid)")
            #expect(try devices.device(app: "APP-1", hwid: hwid)?.badge == badge, "\(hwid)")
        }
        #expect(try devices.getTags(app: "APP-1", hwid: "big", userID: nil)["Score"] == .decimal(.infinity))
        #expect(try devices.getTags(app: "APP-1", hwid: "m-3", userID: nil)["Visits"] == expected["m-3"]!["Visits"])
    }

    /// registerUser, unregisterDevice and setSubscribed calls, with registrations, submitted without
    /// waiting, many for the same devices: they join the batches (the users they add share
    /// transactions), and each device ends as the same calls applied one by one in order leave it.
    /// Each bad call fails alone with the answer it gets on its own and writes nothing: a
    /// subscription or a user of a device never registered, and a user the database refuses.
    @Test func usersUnregistrationsAndSubscriptionsKeepEachDevicesOrderAndABadOneFailsAlone() throws {
        let url = try PostgresServer.shared().makeSchema()
        let backend = try PostgresRestartTests.backend(url: url)
        let devices = backend.devices
        for device in 0..<4 { try devices.registerDevice(try registration("u-\(device)", token: "t-\(device)", level: 0), now: 1) }
        // Too large for its index entry (random, so that it does not compress).
        let huge = (0..<3_000).map { _ in String(UnicodeScalar(UInt8.random(in: 65...90))) }.joined()
        let count = 400
        enum Call {
            case user(String), unregister, subscribe(Bool), register(String)
        }
        func call(_ index: Int) -> (hwid: String, call: Call) {
            switch index {
            case 150: return ("never-registered", .subscribe(true))
            case 151: return ("never-registered", .user("user-151"))
            case 152: return ("u-0", .user(huge))
            default: break
            }
            let hwid = "u-\(index % 4)"
            switch index / 4 % 4 {
            case 0: return (hwid, .user("user-\(index)"))
            case 1: return (hwid, .subscribe(index % 3 == 0))
            case 2: return (hwid, .unregister)
            default: return (hwid, .register("t-\(index)"))
            }
        }
        let seen = try Self.submitAll(backend, count: count) { index in
            let (hwid, call) = call(index)
            switch call {
            case .user(let user):
                return { try devices.registerUser(app: "APP-1", hwid: hwid, attributes: DeviceAttributes(language: "l\(index)"), userID: user, now: 2) }
            case .unregister:
                return { try devices.unregisterDevice(app: "APP-1", hwid: hwid, now: 2) }
            case .subscribe(let subscribed):
                return { try devices.setSubscribed(app: "APP-1", hwid: hwid, subscribed: subscribed, now: 2) }
            case .register(let token):
                let request = DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: token, gateway: nil,
                                                 attributes: DeviceAttributes(platform: 3), tags: [])
                return { try devices.registerDevice(request, now: 2) }
            }
        }
        for (index, answer) in seen.sorted(by: { $0.key < $1.key }) {
            switch index {
            case 150: #expect(answer.contains("not found"), "request \(index): \(answer)")
            case 151: #expect(answer.contains("register it first"), "request \(index): \(answer)")
            case 152: #expect(answer.contains("too long"), "request \(index): \(answer)")
            default: #expect(answer == "ok", "request \(index): \(answer)")
            }
        }
        // The same calls one by one, in order: the token, subscription, user and language of each device.
        var expected = [String: (token: String?, subscribed: Bool, user: String?, language: String?)]()
        for device in 0..<4 { expected["u-\(device)"] = ("t-\(device)", true, nil, "en") }
        var users: [String] = []
        for index in 0..<count where ![150, 151, 152].contains(index) {
            let (hwid, call) = call(index)
            switch call {
            case .user(let user):
                expected[hwid]!.user = user
                expected[hwid]!.language = "l\(index)"
                users.append(user)
            case .unregister: expected[hwid]!.token = nil
            case .subscribe(let subscribed): expected[hwid]!.subscribed = subscribed
            case .register(let token):
                expected[hwid]!.token = token
                expected[hwid]!.subscribed = true
            }
        }
        for (hwid, state) in expected.sorted(by: { $0.key < $1.key }) {
            let record = try #require(try devices.device(app: "APP-1", hwid: hwid))
            #expect(record.pushToken == state.token && record.subscribed == state.subscribed && record.userID == state.user
                && record.language == state.language, "\(hwid): \(record)")
        }
        #expect(try devices.device(app: "APP-1", hwid: "never-registered") == nil)
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        #expect(try connection.rows("SELECT user_id FROM users ORDER BY user_id") { $0.text(0) } == users.sorted())
        let transactions = try #require(try connection.first("SELECT count(DISTINCT xmin::text) FROM users") { $0.int(0) })
        #expect(transactions < Int64(users.count), "\(users.count) users in \(transactions) transactions")
    }

    /// Submits `count` requests at once through `backend.submitRequest`, the one of `index` running
    /// `write(index)`, and waits (at most 60 s) for every answer: "ok", the error, or "503".
    static func submitAll(_ backend: PostgresBackend, count: Int,
                          _ write: (_ index: Int) throws -> @Sendable () throws -> Void) throws -> [Int: String] {
        let answers = Mutex<[Int: String]>([:])
        let done = DispatchGroup()
        for index in 0..<count {
            let work = try write(index)
            done.enter()
            backend.submitRequest({
                do {
                    try work()
                    return "ok"
                } catch {
                    return "\(error)"
                }
            }, onFailure: { "503" }, completion: { answer in
                answers.withLock { $0[index] = answer }
                done.leave()
            })
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        let seen = answers.withLock { $0 }
        #expect(seen.count == count)
        return seen
    }
}
