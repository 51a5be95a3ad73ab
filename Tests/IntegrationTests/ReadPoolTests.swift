import Foundation
import Core
import Postgres
import SDKClient
import Synchronization
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Requests that only read, as the SDKs send them between writes: on PostgreSQL they run on the
/// store's reader threads, so that a read waiting for the server holds up no I/O thread, and they
/// are answered, not dropped, when ingest stops.
@Suite(.serialized) struct ReadPoolTests {
    static let app = HeraldProcesses.appCode

    static func body(_ fields: [String: JSON]) -> [UInt8] {
        var request = fields
        request["application"] = .string(app)
        return JSON.object(["request": .object(request)]).encoded()
    }

    /// getTags of `hwid` on `client`'s connection: the HTTP status and the `Level` tag it read, if any.
    static func level(_ client: HTTPClient, _ hwid: String, timeoutSeconds: Int = 10) throws -> (status: Int, level: JSON?) {
        let response = try client.request("POST", "/json/1.3/getTags", body: body(["hwid": .string(hwid)]), timeoutSeconds: timeoutSeconds)
        let envelope = try? JSON.parse(response.body)
        return (response.status, envelope?["response"]?["result"]?["Level"])
    }

    /// Writers and readers at once, many connections each: every write is acknowledged, and a
    /// getTags right after a setTags reads what that setTags wrote, on either backend.
    @Test func readsAndBatchedWritesAtOnceEachReadSeesTheWritesAcknowledgedBeforeIt() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        for device in 0..<8 {
            try herald.ok("registerDevice", ["application": .string(Self.app), "hwid": .string("rw-\(device)"), "device_type": 3,
                                             "push_token": .string("t-\(device)"), "tags": ["Level": 0]])
        }
        let port = herald.httpPort
        let failures = Mutex<[String]>([])
        #expect(runConcurrently(16) { thread in
            let client = HTTPClient(port: port)
            let hwid = "rw-\(thread % 8)"
            for round in 1...40 {
                do {
                    if thread < 8 {
                        // The only writer of its device: its getTags must see each setTags once acknowledged.
                        let written = try client.request("POST", "/json/1.3/setTags",
                                                         body: Self.body(["hwid": .string(hwid), "tags": ["Level": .int(Int64(round))]]))
                        guard written.status == 200, written.text.contains("\"status_code\":200") else {
                            failures.withLock { $0.append("setTags \(hwid) \(round): \(written.status) \(written.text)") }
                            continue
                        }
                        let read = try Self.level(client, hwid)
                        if read.status != 200 || read.level != .int(Int64(round)) {
                            failures.withLock { $0.append("getTags \(hwid) after round \(round): \(read)") }
                        }
                    } else {
                        let read = try Self.level(client, hwid)
                        if read.status != 200 || read.level == nil { failures.withLock { $0.append("getTags \(hwid): \(read)") } }
                    }
                } catch {
                    failures.withLock { $0.append("\(hwid) round \(round): \(error)") }
                }
            }
        })
        #expect(failures.withLock { $0 } == [])
        for device in 0..<8 { #expect(try Self.level(herald.client, "rw-\(device)").level == 40) }
    }

    /// Herald with one I/O thread, so that a read holding up that thread would hold up every
    /// request, and a device `held` whose `Level` is 7.
    static func oneIOThread() throws -> HeraldProcesses {
        let herald = try HeraldProcesses()
        let config = try herald.writeConfig("one-thread.json") { members in
            if case .object(var http)? = members["http"] {
                http["threads"] = 1
                members["http"] = .object(http)
            }
        }
        try herald.startIngest(config: config)
        try herald.ok("registerDevice", ["application": .string(app), "hwid": "held", "device_type": 3, "push_token": "t", "tags": ["Level": 7]])
        return herald
    }

    /// Holds `device_tags` locked against reads (as a long migration would) on a connection of the
    /// test's own until `release` is called.
    final class TagsLock {
        let connection: PostgresConnection
        init(_ url: String) throws {
            connection = try PostgresConnection(PostgresConnectionSettings(url: url))
            try connection.execute("BEGIN")
            try connection.execute("LOCK TABLE device_tags IN ACCESS EXCLUSIVE MODE")
        }

        /// The statements waiting for the lock.
        func waiting() throws -> Int64 {
            try connection.first("SELECT count(*) FROM pg_locks WHERE relation = 'device_tags'::regclass AND NOT granted") { $0.int(0) } ?? -1
        }

        func release() throws { try connection.execute("COMMIT") }
    }

    /// getTags calls on threads of their own, and their answers (the status and the level read).
    final class BackgroundReads: Sendable {
        let answers = Mutex<[String]>([])
        let done = DispatchGroup()

        /// Starts a getTags of `hwid`.
        func start(port: UInt16, _ hwid: String) {
            done.enter()
            Thread { [self] in
                defer { done.leave() }
                let answer: String
                do {
                    let read = try ReadPoolTests.level(HTTPClient(port: port), hwid, timeoutSeconds: 20)
                    answer = "\(read.status) \(read.level.map { String(decoding: $0.encoded(), as: UTF8.self) } ?? "-")"
                } catch {
                    answer = "\(error)"
                }
                answers.withLock { $0.append(answer) }
            }.start()
        }

        var answered: [String] { answers.withLock { $0 } }
    }

    /// With one I/O thread, a getTags that waits for the server (its table locked) holds up no other
    /// request: a registration is committed and answered, and another kind of read too, meanwhile.
    /// Once the lock goes, the waiting getTags is answered with what it read.
    @Test(.backends(.postgres, reason: "SQLite answers reads inline, where a local read takes microseconds"))
    func aReadWaitingForTheServerHoldsUpNoOtherRequest() throws {
        let herald = try Self.oneIOThread()
        let lock = try TagsLock(try #require(herald.databaseURL))
        let reads = BackgroundReads()
        reads.start(port: herald.httpPort, "held")
        // The read is on the server, waiting for the lock.
        #expect(try waitUntil(seconds: 10) { try lock.waiting() == 1 })
        try herald.ok("registerDevice", ["application": .string(Self.app), "hwid": "meanwhile", "device_type": 1, "push_token": "t2"])
        #expect(try herald.ok("checkDevice", ["application": .string(Self.app), "hwid": "meanwhile"]) == ["exist": true, "push_token_exist": true])
        #expect(reads.answered == [], "the held read was answered before its table was unlocked")
        try lock.release()
        #expect(reads.done.wait(timeout: .now() + 20) == .success)
        #expect(reads.answered == ["200 7"])
    }

    /// SIGTERM while reads wait for the server: ingest stops taking connections, answers each read in
    /// flight once the server answers it, and exits 0; nothing hangs. getTags runs at most two
    /// statements at once (`TagReadBatcher`): two reads wait on the server, the third for them.
    @Test(.backends(.postgres, reason: "SQLite answers reads inline, where a local read takes microseconds"))
    func stoppingWithReadsInFlightAnswersThem() throws {
        let herald = try Self.oneIOThread()
        let ingest = try #require(herald.ingest)
        let lock = try TagsLock(try #require(herald.databaseURL))
        let reads = BackgroundReads()
        for _ in 0..<3 { reads.start(port: herald.httpPort, "held") }
        #expect(try waitUntil(seconds: 10) { try lock.waiting() == 2 })
        // The third read, sent with the others, reaches ingest while the two wait.
        usleep(500_000)
        #expect(try lock.waiting() == 2, "more getTags statements than two waited on the server")
        kill(ingest.processIdentifier, SIGTERM)
        // Stopping: a new connection is refused, or its read (of a table not locked) answered 503.
        let check = Self.body(["hwid": "held"])
        #expect(try waitUntil(seconds: 10) {
            guard let read = try? HTTPClient(port: herald.httpPort).request("POST", "/json/1.3/checkDevice", body: check, timeoutSeconds: 5)
            else { return true }
            return read.status == 503
        })
        #expect(ingest.isRunning && reads.answered == [], "ingest stopped, or a held read was answered, before the table was unlocked")
        try lock.release()
        #expect(try waitUntil(seconds: 30) { !ingest.isRunning })
        #expect(herald.stopIngest() == 0)
        #expect(reads.done.wait(timeout: .now() + 5) == .success)
        #expect(reads.answered == ["200 7", "200 7", "200 7"])
    }

    /// Polls `condition` every 20 ms for at most `seconds`; whether it became true.
    func waitUntil(seconds: Double, _ condition: () throws -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return false
    }
}
