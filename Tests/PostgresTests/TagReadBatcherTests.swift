import Foundation
import Synchronization
import Testing
import Core
@testable import Postgres
import TestSupport

/// getTags calls read many per statement each get their own device's tags, and only theirs, whether
/// their caller waits or an answer is handed them.
@Suite struct TagReadBatcherTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s"),
                       AppConfiguration(code: "APP-2", name: "Two", apiToken: "u", sink: "s")]
    let store: PostgresDeviceStore

    init() throws {
        let database = try PostgresDatabase(settings: PostgresConnectionSettings(url: try PostgresServer.shared().makeSchema()), poolSize: 4,
                                            acquireTimeoutMilliseconds: 10_000, apps: Self.apps)
        store = PostgresDeviceStore(database: database)
    }

    @Test func concurrentReadsEachGetTheirOwnDevicesTags() throws {
        // Devices 0..<60 in APP-1 with Level = index; the same hwids in APP-2 with Level = 1000 + index;
        // device 7 of APP-1 has a second tag.
        for index in 0..<60 {
            for (app, offset) in [("APP-1", 0), ("APP-2", 1000)] {
                try store.registerDevice(DeviceRegistration(app: app, hwid: "d-\(index)", pushToken: "t-\(index)", gateway: nil,
                                                            attributes: DeviceAttributes(platform: 1),
                                                            tags: TagUpdate.parse(["Level": .int(Int64(offset + index))])), now: 1)
            }
        }
        try store.setTags(app: "APP-1", hwid: "d-7", attributes: DeviceAttributes(), updates: TagUpdate.parse(["City": "Lyon"]), now: 2)
        let wrong = Lock<[String]>([])
        let store = self.store
        #expect(runConcurrently(24) { thread in
            for round in 0..<40 {
                let index = (thread * 7 + round * 13) % 70
                let app = round % 3 == 0 ? "APP-2" : "APP-1"
                var expected: [String: TagValue] = [:]
                if index < 60 { expected["Level"] = .integer(Int64((app == "APP-2" ? 1000 : 0) + index)) }
                if index == 7 && app == "APP-1" { expected["City"] = .string("Lyon") }
                let got: [String: TagValue]?
                if thread % 2 == 0 {
                    got = try? store.getTags(app: app, hwid: "d-\(index)", userID: nil)
                } else {
                    // Answered from a reader thread, exactly once.
                    let answers = Lock<[[String: TagValue]?]>([])
                    let answered = DispatchSemaphore(value: 0)
                    store.getTags(app: app, hwid: "d-\(index)") { result in
                        answers.withLock { $0.append(try? result.get()) }
                        answered.signal()
                    }
                    if answered.wait(timeout: .now() + 10) == .timedOut { wrong.withLock { $0.append("\(app) d-\(index): no answer") } }
                    usleep(1_000)
                    let all = answers.withLock { $0 }
                    if all.count != 1 { wrong.withLock { $0.append("\(app) d-\(index): \(all.count) answers") } }
                    got = all.first ?? nil
                }
                if got != expected { wrong.withLock { $0.append("\(app) d-\(index): \(String(describing: got))") } }
            }
        })
        let mistakes = wrong.withLock { $0 }
        #expect(mistakes.isEmpty, "\(mistakes.count) wrong answers, such as \(mistakes.prefix(3))")
    }

    @Test func answeredCallsAreReadWhileBlockedCallsTakeTheReaderThreads() throws {
        // One pooled connection: four reader threads, kept busy by blocked getTags calls, beside calls
        // that hand an answer. Every call is answered, with its own device's tags.
        let database = try PostgresDatabase(settings: PostgresConnectionSettings(url: try PostgresServer.shared().makeSchema()), poolSize: 1,
                                            acquireTimeoutMilliseconds: 10_000, apps: Self.apps)
        let store = PostgresDeviceStore(database: database)
        for index in 0..<8 {
            for app in ["APP-1", "APP-2"] {
                try store.registerDevice(DeviceRegistration(app: app, hwid: "d-\(index)", pushToken: "t-\(index)", gateway: nil,
                                                            attributes: DeviceAttributes(platform: 1),
                                                            tags: TagUpdate.parse(["Level": .int(Int64(index))])), now: 1)
            }
        }
        let answered = Lock<[String]>([])
        let group = DispatchGroup()
        // The apps alternate, so that each statement takes few calls and turns change hands often.
        for round in 0..<200 {
            let hwid = "d-\(round % 8)", app = round % 2 == 0 ? "APP-1" : "APP-2"
            group.enter()
            database.submitRead({ (try? store.getTags(app: app, hwid: hwid, userID: nil))?["Level"] }) { level in
                answered.withLock { $0.append("blocked \(hwid) \(String(describing: level))") }
                group.leave()
            }
            group.enter()
            store.getTags(app: round % 4 < 2 ? "APP-2" : "APP-1", hwid: hwid) { result in
                answered.withLock { $0.append("answered \(hwid) \(String(describing: (try? result.get())?["Level"]))") }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 20) == .success, "\(answered.withLock { $0.count }) of 400 calls answered within 20 s")
        let wrong = answered.withLock { $0 }.filter { line in
            let parts = line.split(separator: " ")
            return parts[2] != "Optional(Core.TagValue.integer(\(parts[1].dropFirst(2))))"
        }
        #expect(wrong.isEmpty, "wrong answers: \(wrong.prefix(3))")
    }
}

