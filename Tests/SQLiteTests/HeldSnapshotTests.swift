import Foundation
import Testing
import Core
@testable import SQLite
import TestSupport

/// Read transactions that `SQLiteDatabase.readLatest` keeps open between reads (getTags).
@Suite struct HeldSnapshotTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    /// A database with device H1 tagged `n = 1`, whose next getTags holds its snapshot (the
    /// checkpointer has copied the WAL back within a few seconds).
    func databaseHoldingASnapshot(_ folder: TemporaryDirectory) throws -> (SQLiteDatabase, SQLiteDeviceStore) {
        let database = try SQLiteDatabase(path: folder.file("h.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps)
        let devices = SQLiteDeviceStore(database: database)
        try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H1", pushToken: "tok", gateway: nil,
                                                      attributes: DeviceAttributes(platform: 1), tags: [TagUpdate(name: "n", operation: .set(.int(1)))]),
                                   now: 1_000)
        let deadline = monotonicSeconds() + 10
        while database.heldSnapshots == 0, monotonicSeconds() < deadline {
            #expect(try devices.getTags(app: "APP-1", hwid: "H1", userID: nil) == ["n": .integer(1)])
            usleep(50_000)
        }
        try #require(database.heldSnapshots == 1, "no getTags held its snapshot within 10 s")
        return (database, devices)
    }

    @Test func aHeldSnapshotSeesWhatAnotherProcessCommitsAfterIt() throws {
        let folder = try TemporaryDirectory()
        let (database, devices) = try databaseHoldingASnapshot(folder)
        // Another process's connection, as a herald-worker or herald-ctl would open.
        let other = try SQLiteConnection(path: folder.file("h.sqlite"), busyTimeoutMilliseconds: 2000)
        defer { other.close() }
        for value in 2...4 {
            try other.execute("UPDATE device_tags SET num = \(value) WHERE name = 'n'")
            #expect(try devices.getTags(app: "APP-1", hwid: "H1", userID: nil) == ["n": .integer(Int64(value))])
        }
        // And what this process's writer commits.
        try devices.setTags(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(), updates: [TagUpdate(name: "n", operation: .set(.int(5)))],
                            now: 1_001)
        #expect(try devices.getTags(app: "APP-1", hwid: "H1", userID: nil) == ["n": .integer(5)])
        _ = database
    }

    @Test func theCheckpointerEndsAnIdleHeldSnapshotAndCopiesTheWALBack() throws {
        let folder = try TemporaryDirectory()
        let (database, devices) = try databaseHoldingASnapshot(folder)
        // Writes after the snapshot; no read comes to end it.
        for index in 0..<50 {
            try devices.setTags(app: "APP-1", hwid: "H1", attributes: DeviceAttributes(),
                                updates: [TagUpdate(name: "m", operation: .set(.int(Int64(index))))], now: 1_001)
        }
        let watcher = try SQLiteConnection(path: folder.file("h.sqlite"), busyTimeoutMilliseconds: 2000)
        defer { watcher.close() }
        let wal = try #require(WALIndex(connection: watcher))
        #expect(!wal.read().backfilled)
        let deadline = monotonicSeconds() + 10
        while !wal.read().backfilled, monotonicSeconds() < deadline { usleep(50_000) }
        #expect(wal.read().backfilled, "the WAL was not copied back within 10 s")
        #expect(database.heldSnapshots == 0)
    }
}
