import Foundation
import Synchronization
import Testing
import Core
@testable import SQLite
import TestSupport

/// The pooled reading connections (`SQLiteDatabase.pooled`), kept in per-thread stripes, and the
/// page caches counted for `herald_store_memory_bytes` (`SQLiteDatabase.pageCacheBytes`: SQLite keeps
/// no count of the process's memory here, see `SQLiteConnection.withoutMemoryStatistics`).
@Suite struct ReaderPoolTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    /// A database in `folder` with `count` devices, device-0… each tagged `n` = its number.
    private func database(_ folder: TemporaryDirectory, devices count: Int) throws -> (SQLiteDatabase, SQLiteDeviceStore) {
        let database = try SQLiteDatabase(path: folder.file("r.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps,
                                          synchronousFull: false)
        let devices = SQLiteDeviceStore(database: database)
        for number in 0..<count {
            try devices.registerDevice(
                DeviceRegistration(app: "APP-1", hwid: "device-\(number)", pushToken: "token-\(number)-" + String(repeating: "t", count: 100),
                                   gateway: nil, attributes: DeviceAttributes(platform: 1),
                                   tags: [TagUpdate(name: "n", operation: .set(.int(Int64(number))))]),
                now: 1_000)
        }
        return (database, devices)
    }

    /// Reads made one after another, each on a thread of its own, share one connection: a thread
    /// whose stripe holds none takes another stripe's idle one before it opens a new one.
    @Test func readsOneAfterAnotherOnManyThreadsShareOneConnection() throws {
        let folder = try TemporaryDirectory()
        let (database, devices) = try database(folder, devices: 1)
        let read = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<32 {
            Thread {
                if (try? devices.getTags(app: "APP-1", hwid: "device-0", userID: nil)) == ["n": .integer(0)] { read.withLock { $0 += 1 } }
                done.signal()
            }.start()
            done.wait()
        }
        #expect(read.withLock { $0 } == 32)
        #expect(database.readerCount == 1)
    }

    @Test func theWritersCacheAndTheReadersCachesAreCounted() throws {
        let folder = try TemporaryDirectory()
        let count = 2_000
        let (database, devices) = try database(folder, devices: count)
        let written = database.pageCacheBytes
        #expect(written > 0)
        // Every device read back through the pooled readers: their caches now hold the registry too.
        for number in 0..<count {
            #expect(try devices.getTags(app: "APP-1", hwid: "device-\(number)", userID: nil) == ["n": .integer(Int64(number))])
        }
        let read = database.pageCacheBytes
        #expect(read > written + 100 * 1024, "\(written) bytes after the writes, \(read) after the reads")
    }
}
