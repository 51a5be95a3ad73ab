import Testing
import Core
@testable import SQLite
import TestSupport

/// `SQLiteDatabase.pageCacheBytes`, the figure behind `herald_store_memory_bytes`: SQLite keeps no
/// count of the process's memory here (`SQLiteConnection.withoutMemoryStatistics`), so each
/// connection's page cache is measured on its own.
@Suite struct PageCacheTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    @Test func theWritersCacheAndTheReadersCachesAreCounted() throws {
        let folder = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: folder.file("c.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps,
                                          synchronousFull: false)
        let devices = SQLiteDeviceStore(database: database)
        let count = 2_000
        for number in 0..<count {
            try devices.registerDevice(
                DeviceRegistration(app: "APP-1", hwid: "device-\(number)", pushToken: "token-\(number)-" + String(repeating: "t", count: 100),
                                   gateway: nil, attributes: DeviceAttributes(platform: 1),
                                   tags: [TagUpdate(name: "n", operation: .set(.int(Int64(number))))]),
                now: 1_000)
        }
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
