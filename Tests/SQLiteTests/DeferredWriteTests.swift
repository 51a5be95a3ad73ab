import Foundation
import Synchronization
import Testing
import Core
@testable import SQLite
import TestSupport

/// registerDevice and setTags requests of one writer batch are written together (`DeferredWrite`):
/// the database ends as it would had each been written alone, in order, and a write of the batch
/// that fails fails alone.
@Suite struct DeferredWriteTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
    static let token = String(repeating: "f", count: 64)

    static func registration(_ hwid: String, token: String = token, language: String? = "en", userID: String? = nil,
                             tags: [String: JSON] = [:]) -> DeviceRegistration {
        DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: token, gateway: nil,
                           attributes: DeviceAttributes(platform: 1, language: language, userID: userID),
                           tags: tags.keys.sorted().map { TagUpdate(name: $0, operation: tags[$0].map(TagUpdate.Operation.set) ?? .delete) })
    }

    /// Every column of every row of `table` but those `except`, in `order`.
    static func dump(_ database: SQLiteDatabase, _ table: String, order: String, except: Set<String> = []) throws -> [String] {
        try database.read { connection in
            let columns = try connection.prepare("SELECT name FROM pragma_table_info(?)").rows([.text(table)]) { $0.text(0) }
                .filter { !except.contains($0) }
            let row = columns.map { "quote(\($0))" }.joined(separator: " || '|' || ")
            return try connection.prepare("SELECT \(row) FROM \(table) ORDER BY \(order)").rows([]) { $0.text(0) }
        }
    }

    static func tables(_ database: SQLiteDatabase) throws -> [[String]] {
        try [dump(database, "devices", order: "id"), dump(database, "device_tags", order: "device_id, name"),
             dump(database, "users", order: "app_id, user_id"), dump(database, "permission_changes", order: "app_id, at, device_id, seq"),
             dump(database, "device_tag_items", order: "device_id, name, item"),
             // A definition's creation time is the wall clock's.
             dump(database, "tag_definitions", order: "app_id, name", except: ["created_at"])]
    }

    /// The same calls in one batch, and one at a time outside any batch, answer alike and leave the
    /// same rows: new devices, one registered twice (its second token wins), one unchanged and one
    /// changed since before the batch, users, tags set and changed (by registrations and setTags,
    /// one of a device registered earlier in the batch), attributes a setTags gives (one followed
    /// by a registration of its device, which wins), a list set twice for one device (its last
    /// items win) and once for a new one, a tag not defined yet (written alone, between the others),
    /// and a setTags of a device that does not exist.
    @Test func callsOfOneBatchLeaveWhatOneAtATimeLeaves() throws {
        let folder = try TemporaryDirectory()
        let before = [
            Self.registration("old-same", tags: ["Level": 1, "City": "Paris"]),
            Self.registration("old-changed", tags: ["Level": 1]),
            Self.registration("old-list", tags: ["Pets": .array(["dog"])]),
        ]
        func register(_ registration: DeviceRegistration) -> @Sendable (SQLiteDeviceStore) throws -> Void {
            { try $0.registerDevice(registration, now: 200) }
        }
        func setTags(_ hwid: String, _ tags: [String: JSON], language: String? = nil) -> @Sendable (SQLiteDeviceStore) throws -> Void {
            let updates = tags.keys.sorted().map { TagUpdate(name: $0, operation: .set(tags[$0] ?? .null)) }
            let attributes = DeviceAttributes(language: language)
            return { try $0.setTags(app: "APP-1", hwid: hwid, attributes: attributes, updates: updates, now: 200) }
        }
        let calls = [
            register(Self.registration("new-1", tags: ["Level": 5, "City": "Oslo"])),
            register(Self.registration("new-2", userID: "user-2", tags: ["Level": 6])),
            setTags("old-same", ["Level": 3]),
            setTags("old-list", ["Pets": .array(["cat", "cow"])]),
            setTags("old-changed", ["Level": 4], language: "pt"),
            register(Self.registration("old-same", tags: ["Level": 1, "City": "Paris"])),
            register(Self.registration("new-1", token: String(repeating: "e", count: 64), tags: ["Level": 7])),
            register(Self.registration("old-list", tags: ["Pets": .array(["emu", "cat"])])),
            setTags("new-2", ["City": "Lima"]),
            register(Self.registration("old-changed", language: "de", userID: "user-2", tags: ["Level": 2, "City": "Rome"])),
            setTags("new-1", ["Level": 9], language: "sv"),
            register(Self.registration("new-1", tags: ["Level": 10])),
            register(Self.registration("new-3", tags: ["Fresh": "first"])),
            register(Self.registration("new-4", tags: ["Level": 8, "Fresh": "again"])),
            register(Self.registration("new-5", tags: ["Pets": .array(["cat"])])),
            register(Self.registration("new-6", userID: "user-6")),
            setTags("nobody", ["Level": 1]),
        ]
        var results: [[[String]]] = []
        for together in [true, false] {
            let database = try SQLiteDatabase(path: folder.file("\(together).sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
            let store = SQLiteDeviceStore(database: database)
            for registration in before { try store.registerDevice(registration, now: 100) }
            let answers: [Bool]
            if together {
                answers = inOneBatch(database, calls.map { call in { (try? call(store)) != nil } })
                // Written together: the first eight (new-2's setTags needs its registration written),
                // the next three (new-1's second registration must come after the attributes its
                // setTags gives) and the three after new-3; new-1's second registration is the only
                // write put off before new-3, so it is written alone, like new-3 and nobody's.
                #expect(try database.write { $0.writtenTogether } == 14)
            } else {
                answers = calls.map { (try? $0(store)) != nil }
            }
            #expect(answers == Array(repeating: true, count: calls.count - 1) + [false])
            results.append(try Self.tables(database))
        }
        #expect(results[0] == results[1])
        // What the comparison rests on: the batch wrote rows of every kind.
        #expect(results[0][0].count == 9 && results[0][1].count == 13 && results[0][2].count == 2 && results[0][3].count == 9)
        // old-list keeps its last list's items, new-5 its own.
        #expect(results[0][4].map { $0.split(separator: "|")[2] } == ["'cat'", "'emu'", "'cat'"])
    }

    /// A new device's opt-in history begins with one registered row, in a batch as alone: opted in
    /// or out as it came, once for a device registered twice (with its first registration's app
    /// version), and opted out for a device a setTags creates. A device whose second registration in
    /// the batch turns its permission off gets that change's row too: the change's row takes `seq` 0
    /// before the batch writes the first, which collides, and the batch's writes are then made alone.
    @Test func newDevicesBeginTheirOptInHistoryInABatchAsAlone() throws {
        let folder = try TemporaryDirectory()
        func register(_ hwid: String, types: Int64, version: String = "1.0") -> @Sendable (SQLiteDeviceStore) throws -> Void {
            let registration = DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: Self.token, gateway: nil,
                                                  attributes: DeviceAttributes(platform: 1, appVersion: version, notificationTypes: types),
                                                  tags: [])
            return { try $0.registerDevice(registration, now: 200) }
        }
        let batches: [[@Sendable (SQLiteDeviceStore) throws -> Void]] = [
            [
                register("in", types: 7), register("off", types: 0), register("again", types: 7), register("again", types: 7, version: "1.1"),
                { try $0.setTags(app: "APP-1", hwid: "tagged", attributes: DeviceAttributes(platform: 1, appVersion: "2.0"), updates: [], now: 200) },
            ],
            [register("flipped", types: 7), register("flipped", types: 0)],
        ]
        var histories: [[String]] = []
        for together in [true, false] {
            let database = try SQLiteDatabase(path: folder.file("h-\(together).sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
            let store = SQLiteDeviceStore(database: database)
            try store.registerDevice(Self.registration("seed"), now: 100)
            for (number, calls) in batches.enumerated() {
                let answers = together ? inOneBatch(database, calls.map { call in { (try? call(store)) != nil } })
                    : calls.map { (try? $0(store)) != nil }
                #expect(answers == Array(repeating: true, count: calls.count))
                // The first batch's four registrations are written together; the second's collide.
                if together { #expect(try database.write { $0.writtenTogether } == 4, "after batch \(number + 1)") }
            }
            histories.append(try database.read { connection in
                try connection.prepare("""
                    SELECT d.hwid, p.at, p.seq, p.app_version, p.opted_in, p.registered FROM permission_changes p
                    JOIN devices d ON d.id = p.device_id ORDER BY p.device_id, p.seq
                    """).rows([]) { "\($0.text(0)) \($0.int(1)) \($0.int(2)) \($0.optionalText(3) ?? "-") \($0.int(4)) \($0.int(5))" }
            })
        }
        #expect(histories[0] == ["seed 100 0 - 1 1", "in 200 0 1.0 1 1", "off 200 0 1.0 0 1", "again 200 0 1.0 1 1",
                                 "tagged 200 0 2.0 0 1", "flipped 200 0 1.0 1 1", "flipped 200 1 1.0 0 0"])
        #expect(histories[0] == histories[1])
    }

    /// Two hwids that spell one text two ways (a precomposed letter, a letter and a combining mark)
    /// are two devices to SQLite, in a batch as alone: each keeps its own tags and opt-in row.
    @Test func hwidsThatSpellOneTextTwoWaysAreTwoDevicesInABatch() throws {
        let folder = try TemporaryDirectory()
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(composed == decomposed && !composed.utf8.elementsEqual(decomposed.utf8))
        var tables: [[[String]]] = []
        for together in [true, false] {
            let database = try SQLiteDatabase(path: folder.file("u-\(together).sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
            let store = SQLiteDeviceStore(database: database)
            try store.registerDevice(Self.registration("seed", tags: ["Level": 1]), now: 100)
            let calls: [@Sendable () -> Bool] = [(composed, 2), (decomposed, 3)].map { hwid, level in
                { (try? store.registerDevice(Self.registration(hwid, tags: ["Level": .int(level)]), now: 200)) != nil }
            }
            #expect((together ? inOneBatch(database, calls) : calls.map { $0() }) == [true, true])
            if together { #expect(try database.write { $0.writtenTogether } == 2) }
            tables.append(try Self.tables(database))
            #expect(try store.getTags(app: "APP-1", hwid: decomposed, userID: nil)["Level"] == .integer(3))
        }
        #expect(tables[0] == tables[1])
        #expect(tables[0][0].count == 3 && tables[0][3].count == 3)
    }

    /// A batch's registrations are written in pieces of four, two and one here. The first and last
    /// pieces are wholly new devices, whose ids follow the largest one; the middle piece holds a
    /// device registered before, so its ids are looked up. Each device, new or old, keeps its own
    /// tags and opt-in rows, in a batch as alone.
    @Test func piecesOfNewAndKnownDevicesEachFindTheirOwnIDs() throws {
        let folder = try TemporaryDirectory()
        let hwids = ["n-1", "n-2", "n-3", "n-4", "n-5", "old", "n-6"]
        var tables: [[[String]]] = []
        for together in [true, false] {
            let database = try SQLiteDatabase(path: folder.file("p-\(together).sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
            let store = SQLiteDeviceStore(database: database)
            try store.registerDevice(Self.registration("old", tags: ["Level": 0]), now: 100)
            let calls: [@Sendable () -> Bool] = hwids.enumerated().map { level, hwid in
                { (try? store.registerDevice(Self.registration(hwid, tags: ["Level": .int(Int64(level + 1))]), now: 200)) != nil }
            }
            #expect((together ? inOneBatch(database, calls) : calls.map { $0() }) == Array(repeating: true, count: hwids.count))
            if together { #expect(try database.write { $0.writtenTogether } == hwids.count) }
            for (level, hwid) in hwids.enumerated() {
                #expect(try store.getTags(app: "APP-1", hwid: hwid, userID: nil)["Level"] == .integer(Int64(level + 1)), "\(hwid)")
            }
            tables.append(try Self.tables(database))
        }
        #expect(tables[0] == tables[1])
        // Seven devices with one opt-in row each: the old one's from before the batch.
        #expect(tables[0][0].count == 7 && tables[0][3].count == 7)
    }

    /// A write after a registration of its batch sees the device (the registration is written first).
    @Test func aWriteAfterARegistrationInItsBatchSeesTheDevice() throws {
        let folder = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: folder.file("o.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
        let store = SQLiteDeviceStore(database: database)
        try store.registerDevice(Self.registration("seed", tags: ["Level": 1]), now: 100)
        let answers = inOneBatch(database, [
            { (try? store.registerDevice(Self.registration("d-1", tags: ["Level": 3]), now: 200)) != nil },
            {
                (try? store.setTags(app: "APP-1", hwid: "d-1", attributes: DeviceAttributes(),
                                    updates: [TagUpdate(name: "Level", operation: .increment(2))], now: 200)) != nil
            },
        ])
        #expect(answers == [true, true])
        #expect(try store.getTags(app: "APP-1", hwid: "d-1", userID: nil)["Level"] == .integer(5))
    }

    /// When the statement that writes the batch's registrations fails, each is written alone: the
    /// one that fails alone fails its request, and the others commit with their tags.
    @Test func aRegistrationThatFailsFailsAloneAndTheOthersCommit() throws {
        let folder = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: folder.file("f.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
        let store = SQLiteDeviceStore(database: database)
        try store.registerDevice(Self.registration("seed", tags: ["Level": 1]), now: 100)
        try database.write { writer in
            try writer.connection.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON devices WHEN NEW.hwid = 'refused' BEGIN SELECT RAISE(ABORT, 'refused'); END")
        }
        let answers = inOneBatch(database, ["a", "refused", "b"].map { hwid in
            { (try? store.registerDevice(Self.registration(hwid, tags: ["Level": 4]), now: 200)) != nil }
        })
        #expect(answers == [true, false, true])
        #expect(try database.write { $0.writtenTogether } == 0)
        let devices = try database.read { connection in
            try connection.prepare("SELECT d.hwid, t.num FROM devices d JOIN device_tags t ON t.device_id = d.id ORDER BY d.id").rows([]) {
                "\($0.text(0))=\($0.int(1))"
            }
        }
        #expect(devices == ["seed=1", "a=4", "b=4"])
    }

    /// A tag value that does not fit its type is refused when the request runs, as it is alone,
    /// and writes nothing.
    @Test func aTagValueThatDoesNotFitItsTypeIsRefusedAndWritesNothing() throws {
        let folder = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: folder.file("t.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
        let store = SQLiteDeviceStore(database: database)
        try store.registerDevice(Self.registration("seed", tags: ["Level": 1]), now: 100)
        let errors = Mutex<[String]>([])
        let answers = inOneBatch(database, [
            { (try? store.registerDevice(Self.registration("ok", tags: ["Level": 2]), now: 200)) != nil },
            {
                do {
                    try store.registerDevice(Self.registration("bad", tags: ["Level": "many"]), now: 200)
                    return true
                } catch {
                    errors.withLock { $0.append("\(error)") }
                    return false
                }
            },
        ])
        #expect(answers == [true, false])
        #expect(errors.withLock { $0.count } == 1)
        #expect(try store.device(app: "APP-1", hwid: "bad") == nil)
        #expect(try store.device(app: "APP-1", hwid: "ok") != nil)
    }
}
