import Foundation
import Synchronization
import Testing
import Core
@testable import SQLite
import TestSupport

/// The pooled reading connections, kept in per-thread stripes (`SQLiteDatabase.pooled`).
@Suite struct ReaderPoolTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    /// Reads made one after another, each on a thread of its own, share one connection: a thread
    /// whose stripe holds none takes another stripe's idle one before it opens a new one.
    @Test func readsOneAfterAnotherOnManyThreadsShareOneConnection() throws {
        let folder = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: folder.file("r.sqlite"), busyTimeoutMilliseconds: 2000, apps: Self.apps,
                                          synchronousFull: false)
        let devices = SQLiteDeviceStore(database: database)
        try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H1", pushToken: "tok", gateway: nil,
                                                      attributes: DeviceAttributes(platform: 1),
                                                      tags: [TagUpdate(name: "n", operation: .set(.int(1)))]),
                                   now: 1_000)
        let read = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<32 {
            Thread {
                if (try? devices.getTags(app: "APP-1", hwid: "H1", userID: nil)) == ["n": .integer(1)] { read.withLock { $0 += 1 } }
                done.signal()
            }.start()
            done.wait()
        }
        #expect(read.withLock { $0 } == 32)
        #expect(database.readerCount == 1)
    }
}
