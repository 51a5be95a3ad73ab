import Foundation
import Synchronization
import Testing
import Core
@testable import Postgres
import TestSupport

/// A PostgreSQL restart (here a crash: `pg_ctl stop -m immediate`) is survived without reopening
/// the store: meanwhile every call fails at once with a retryable error (ingest answers 503), and
/// afterwards the pool reconnects by itself; nothing acknowledged before the crash is lost.
@Suite struct PostgresRestartTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    func register(_ store: any DeviceStore, _ hwid: String) throws(StoreError) {
        try store.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "tok-\(hwid)", gateway: nil,
                                                    attributes: DeviceAttributes(platform: 3), tags: try! TagUpdate.parse(["Level": 1])),
                                 now: 1)
    }

    /// A backend (four pooled connections) on the database at `url`, with the app `APP-1`.
    /// A backend on `url` with a pool of four, or as `adjust` sets it.
    static func backend(url: String, _ adjust: (inout DatabaseSettings) -> Void = { _ in }) throws -> PostgresBackend {
        var settings = DatabaseSettings(path: "unused")
        settings.url = url
        settings.poolSize = 4
        adjust(&settings)
        return try PostgresBackend(database: settings, apps: apps)
    }

    /// The reads behind /healthz and /metrics wait for a frozen server (it holds the connection
    /// but never answers) no longer than for a free connection, not the statement timeout.
    @Test func theHealthAndMetricsReadsWaitNoLongerThanTheBusyTimeout() throws {
        let server = try PostgresServer()
        let backend = try Self.backend(url: server.url) { settings in
            settings.poolSize = 1
            settings.busyTimeoutMilliseconds = 1000
            settings.statementTimeoutMilliseconds = 60_000
        }
        _ = try backend.campaigns.queueDepth()
        try server.freeze()
        defer { try? server.thaw() }
        let reads: [(String, @Sendable () throws(StoreError) -> Void)] = [
            ("queueDepth", { () throws(StoreError) in _ = try backend.campaigns.queueDepth() }),
            ("ping", { () throws(StoreError) in try backend.devices.ping() }),
        ]
        for (name, read) in reads {
            let answered = DispatchSemaphore(value: 0)
            let failure = Mutex<StoreError?>(nil)
            Thread {
                do throws(StoreError) { try read() } catch { failure.withLock { $0 = error } }
                answered.signal()
            }.start()
            // Far below the statement timeout's 61 s; the answer deadline is 1 s.
            #expect(answered.wait(timeout: .now() + 20) == .success, "\(name) still waits for the frozen server")
            guard case .backend(let error)? = failure.withLock({ $0 }) else {
                Issue.record("\(name): expected a backend failure, got \(String(describing: failure.withLock { $0 }))")
                continue
            }
            #expect(error.isRetryable, "\(name): \(error)")
        }
        try server.thaw()
        let deadline = Date().addingTimeInterval(20)
        var depth: QueueDepth?
        while depth == nil && Date() < deadline {
            depth = try? backend.campaigns.queueDepth()
            if depth == nil { usleep(100_000) }
        }
        #expect(depth?.shards.isEmpty == true, "no answer within 20 s of the thaw")
    }

    /// `busy_timeout_ms` 0 (allowed: a call then never waits for a free connection) still leaves
    /// the health and metrics reads time for the server's answer.
    @Test func theHealthAndMetricsReadsAnswerWithABusyTimeoutOfZero() throws {
        let server = try PostgresServer()
        let backend = try Self.backend(url: server.url) { $0.busyTimeoutMilliseconds = 0 }
        for _ in 0..<5 {
            try backend.devices.ping()
            #expect(try backend.campaigns.queueDepth().shards.isEmpty)
        }
    }

    @Test func aRestartIsRiddenOutWithRetryableErrorsAndNothingAcknowledgedIsLost() throws {
        let server = try PostgresServer()
        let backend = try Self.backend(url: server.url)
        let store = backend.devices
        for index in 0..<20 { try register(store, "before-\(index)") }

        server.stop(immediately: true)
        for attempt in 0..<5 {
            let started = Date()
            let error = #expect(throws: StoreError.self) { try register(store, "during-\(attempt)") }
            guard case .backend(let failure)? = error else {
                Issue.record("expected a backend failure, got \(String(describing: error))")
                return
            }
            #expect(failure.isRetryable && failure.backend == "postgres", "\(failure)")
            #expect(Date().timeIntervalSince(started) < 3, "a call while the server is down must not hang")
            #expect(throws: StoreError.self) { try store.ping() }
        }

        try server.start()
        let deadline = Date().addingTimeInterval(15)
        var recovered = false
        while !recovered && Date() < deadline {
            recovered = (try? store.ping()) != nil
            if !recovered { usleep(100_000) }
        }
        #expect(recovered, "the store did not reconnect within 15 s")
        try register(store, "after")
        for index in 0..<20 {
            #expect(try store.getTags(app: "APP-1", hwid: "before-\(index)", userID: nil)["Level"] == .integer(1))
        }
        #expect(try store.device(app: "APP-1", hwid: "after") != nil)
        #expect(try store.device(app: "APP-1", hwid: "during-0") == nil)
    }

    /// kill -9 of the server while registrations stream through the batches in flight: every
    /// request is answered (503 while the server is away, never a hang), and every registration
    /// answered as done is there after the restart.
    @Test func aCrashDuringBatchesInFlightLosesNothingAnswered() throws {
        let server = try PostgresServer()
        let backend = try Self.backend(url: server.url)
        let store = backend.devices
        try register(store, "seed")
        let (answers, before) = try Self.stream(through: server, backend: backend, count: 400) { client, index in
            let hwid = "c\(client)-\(index)"
            return [(hwid, { @Sendable in try self.register(store, hwid) })]
        }
        let done = answers.filter { $0.value == "done" }.map(\.key)
        let failed = answers.values.filter { $0 != "done" }
        #expect(done.count >= before + 400, "\(done.count) registrations done, \(before) before the crash")
        #expect(!failed.isEmpty && failed.allSatisfy { $0 == "503" }, "answers while the server was away: \(Set(failed))")
        for hwid in done {
            #expect(try store.device(app: "APP-1", hwid: hwid) != nil, "\(hwid) was answered as registered but is missing")
        }
    }

    /// kill -9 of the server while SDK sessions stream through the batches in flight, each device
    /// registering with a user, setting tags with a list, opening the app and posting an event, one
    /// request at a time: every request is answered (503 while the server is away), and the effect of
    /// every one answered as done is there after the restart.
    @Test func aCrashDuringSessionsInFlightLosesNoAnsweredWrite() throws {
        let server = try PostgresServer()
        let backend = try Self.backend(url: server.url)
        let store = backend.devices
        // Defines the tag types, so that the sessions' writes are batched.
        try store.registerDevice(DeviceRegistration(app: "APP-1", hwid: "seed", pushToken: "t", gateway: nil,
                                                    attributes: DeviceAttributes(platform: 3),
                                                    tags: try TagUpdate.parse(["Level": 1, "Interests": ["a"]])), now: 1)
        enum Step: Int, CaseIterable { case register, tags, open, event }
        /// Runs `step` of device `hwid` (number `index`).
        @Sendable func run(_ step: Step, _ hwid: String, _ index: Int) throws(StoreError) {
            switch step {
            case .register:
                try store.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "tok-\(hwid)", gateway: nil,
                                                            attributes: DeviceAttributes(platform: 3, userID: "u-\(hwid)"), tags: []),
                                         now: 2)
            case .tags:
                try store.setTags(app: "APP-1", hwid: hwid, attributes: DeviceAttributes(platform: 3, sdkVersion: "6.0"),
                                  updates: try! TagUpdate.parse(["Level": .int(Int64(index)), "Interests": [.string(hwid), "b"]]), now: 2)
            case .open:
                try store.applicationOpen(app: "APP-1", hwid: hwid, attributes: DeviceAttributes(platform: 3), now: Int64(10_000 + index))
            case .event:
                try store.record([SDKReport(kind: .event, app: "APP-1", hwid: hwid, userID: nil, platform: 3, name: "e-\(hwid)", hash: nil,
                                            body: [:], timestampUTC: nil, timestampCurrent: nil)], now: 2)
            }
        }
        struct Key: Hashable {
            let hwid: String
            let index: Int
            let step: Step
        }
        let (answers, before) = try Self.stream(through: server, backend: backend, count: 800) { client, index in
            let hwid = "c\(client)-\(index)"
            return Step.allCases.map { step in (Key(hwid: hwid, index: index, step: step), { try run(step, hwid, index) }) }
        }
        let done = answers.filter { $0.value == "done" }.map(\.key)
        let failed = Set(answers.values.filter { $0 != "done" })
        #expect(done.count >= before + 800, "\(done.count) writes done, \(before) before the crash")
        // While the server was away: 503 (a setTags or applicationOpen naming the platform creates a
        // device whose registration got one).
        #expect(failed == ["503"], "answers while the server was away: \(failed)")
        let events = Set(try store.reports(app: "APP-1", limit: 1_000_000).map(\.hwid))
        for key in done {
            let device = try store.device(app: "APP-1", hwid: key.hwid)
            switch key.step {
            case .register:
                #expect(device?.pushToken == "tok-\(key.hwid)" && device?.userID == "u-\(key.hwid)", "\(key.hwid) registered")
            case .tags:
                #expect(try store.getTags(app: "APP-1", hwid: key.hwid, userID: nil)
                    == ["Level": .integer(Int64(key.index)), "Interests": .list([key.hwid, "b"])], "\(key.hwid) tags")
            case .open:
                #expect(device?.lastOpenAt == Int64(10_000 + key.index), "\(key.hwid) open")
            case .event:
                #expect(events.contains(key.hwid), "\(key.hwid) event")
            }
        }
    }

    /// Eight clients, each with one request in flight at a time as the SDKs behave, send the writes
    /// `writes(client, index)` gives for index 0, 1, … through `backend.submitRequest`, while the server
    /// is killed with SIGKILL once `count` are done and started again (`crashMidStream`); then they
    /// stop. Checks that every client finished and every request was answered within 30 s; returns
    /// each write's answer ("done", the error, or "503"), and how many were done before the crash.
    static func stream<Key: Hashable & Sendable>(
        through server: PostgresServer, backend: PostgresBackend, count: Int,
        _ writes: @escaping @Sendable (_ client: Int, _ index: Int) -> [(Key, @Sendable () throws -> Void)]
    ) throws -> (answers: [Key: String], before: Int) {
        let answered = Mutex<[Key: String]>([:])
        let stop = Atomic<Bool>(false)
        let unanswered = Atomic<Int>(0)
        let clients = DispatchGroup()
        for client in 0..<8 {
            clients.enter()
            Thread {
                defer { clients.leave() }
                var index = 0
                while !stop.load(ordering: .relaxed) && index < 100_000 {
                    for (key, write) in writes(client, index) {
                        let reply = DispatchSemaphore(value: 0)
                        backend.submitRequest({
                            do {
                                try write()
                                return "done"
                            } catch {
                                return "\(error)"
                            }
                        }, onFailure: { "503" }, completion: { answer in
                            answered.withLock { $0[key] = answer }
                            reply.signal()
                        })
                        guard reply.wait(timeout: .now() + 30) == .success else {
                            unanswered.add(1, ordering: .relaxed)
                            return
                        }
                    }
                    index += 1
                }
            }.start()
        }
        let before = try crashMidStream(server, count: count) { answered.withLock { $0.values.filter { $0 == "done" }.count } }
        stop.store(true, ordering: .relaxed)
        #expect(clients.wait(timeout: .now() + 60) == .success)
        #expect(unanswered.load(ordering: .relaxed) == 0, "requests not answered within 30 s")
        return (answered.withLock { $0 }, before)
    }

    /// Waits (at most 30 s) until `count` writes are done, kills the server with SIGKILL, starts it
    /// again and waits (at most 30 s) for `count` more; returns how many were done before the crash.
    static func crashMidStream(_ server: PostgresServer, count: Int, done: () -> Int) throws -> Int {
        let deadline = Date().addingTimeInterval(30)
        while done() < count && Date() < deadline { usleep(10_000) }
        try server.crash()
        usleep(500_000)
        try server.start()
        let recovery = Date().addingTimeInterval(30)
        let before = done()
        while done() < before + count && Date() < recovery { usleep(10_000) }
        return before
    }
}
