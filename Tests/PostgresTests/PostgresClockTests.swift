import Foundation
import Synchronization
import Testing
import Core
@testable import Postgres
import TestSupport

/// This host's wall clock moved by `skew` seconds: the clock of another host, set wrong.
struct SkewedClock: Clock {
    let skew: Double
    func now() -> Int64 { Int64(preciseNow().rounded(.down)) }
    func preciseNow() -> Double { SystemClock().preciseNow() + skew }
}

/// Processes on hosts whose clocks disagree by hours read one time from `PostgresClock`, the
/// database server's, so they agree on leases and on the dispatcher role. The test server runs on
/// this host, so its clock is this host's real one.
@Suite struct PostgresClockTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
    static let silent = Logger(label: "test", level: .none)

    /// A process of its own on the database at `url`: its connections and its clock, read through
    /// a local clock `skew` seconds off.
    struct Process {
        let database: PostgresDatabase
        let clock: PostgresClock
        var campaigns: PostgresCampaignStore { PostgresCampaignStore(database: database) }

        init(url: String, skew: Double, remeasureSeconds: Double = PostgresClock.remeasureSeconds) throws {
            database = try PostgresDatabase(settings: PostgresConnectionSettings(url: url), poolSize: 2,
                                            acquireTimeoutMilliseconds: 10_000, apps: PostgresClockTests.apps)
            clock = try PostgresClock(database: database, local: SkewedClock(skew: skew), logger: PostgresClockTests.silent,
                                      remeasureSeconds: remeasureSeconds)
        }
    }

    /// The server's time now, read beside the clock under test.
    static func serverTime(url: String) throws -> Double {
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        return try connection.first("SELECT extract(epoch FROM clock_timestamp())::float8") { $0.double(0) } ?? 0
    }

    /// Waits (at most `seconds`) until `condition` holds; whether it did.
    static func wait(seconds: Double, until condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(100_000)
        }
        return try condition()
    }

    @Test(arguments: [3_600.0, -3_600.0, 0.0])
    func readsTheServersTimeThroughALocalClockThatIsOff(skew: Double) throws {
        let url = try PostgresServer.shared().makeSchema()
        let clock = try Process(url: url, skew: skew).clock
        #expect(abs(clock.offset + skew) < 1, "offset \(clock.offset) for a local clock \(skew) s off")
        // Read before and after the server's time: however long the test thread was held up, the
        // server's reading lies between them, give or take the measurement's error.
        let before = clock.preciseNow()
        let server = try Self.serverTime(url: url)
        let after = clock.preciseNow()
        #expect(before - 1 < server && server < after + 1, "clock \(before)…\(after), server \(server)")
        #expect(abs(Double(clock.now()) - server) < 2)
    }

    /// A worker claims a shard and renews nothing; the dispatcher's sweeper, on another host whose
    /// clock disagrees with the worker's by an hour or two, leaves the lease alone while it runs and
    /// takes the shard back once it has really run out.
    @Test(arguments: [(-3_600.0, 0.0), (0.0, 3_600.0), (3_600.0, -3_600.0)])
    func leaseDecisionsAgreeAcrossSkewedHosts(workerSkew: Double, ingestSkew: Double) throws {
        let url = try PostgresServer.shared().makeSchema()
        let ingest = try Process(url: url, skew: ingestSkew)
        let worker = try Process(url: url, skew: workerSkew)
        let devices = PostgresDeviceStore(database: ingest.database)
        for index in 0..<20 {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H\(index)", pushToken: "t\(index)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 3), tags: []), now: ingest.clock.now())
        }
        var spec = MessageSpec(content: ["default": "Hi"])
        spec.schedule = MessageSpec.Schedule(sendAt: ingest.clock.now(), perDeviceTimezone: false)
        _ = try ingest.campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: ingest.clock.now())
        #expect(try ingest.campaigns.activateDueMessages(now: ingest.clock.now(), shardSize: 100) == 1)
        let now = ingest.clock.now()
        let shard = try #require(try ingest.campaigns.leaseShards(worker: "w1", count: 1, now: now, leaseUntil: now + 30).first)

        let leaseSeconds: Int64 = 6
        let leaseUntil = worker.clock.now() + leaseSeconds
        #expect(try worker.campaigns.claimShard(shard, worker: "w1", leaseUntil: leaseUntil, now: worker.clock.now()) != nil)
        #expect(try ingest.campaigns.releaseLeases(now: ingest.clock.now(), liveWorkers: ["w1"]) == 0)
        #expect(try ingest.campaigns.leasedShardCounts() == ["w1": 1])

        #expect(Self.wait(seconds: Double(leaseSeconds) + 10) { ingest.clock.now() > leaseUntil })
        #expect(try ingest.campaigns.releaseLeases(now: ingest.clock.now(), liveWorkers: ["w1"]) == 1)
        #expect(try ingest.campaigns.leasedShardCounts().isEmpty)
        #expect(try worker.campaigns.extendLease(shard: shard, worker: "w1", leaseUntil: worker.clock.now() + leaseSeconds) == false)
    }

    /// An ingest whose clock is an hour slow holds the dispatcher role; one whose clock is an hour
    /// fast cannot take it while the hold is renewed, and takes it once the hold has really run out.
    @Test func theDispatcherRoleMovesOnlyWhenItsHoldRunsOut() throws {
        let url = try PostgresServer.shared().makeSchema()
        let slow = try Process(url: url, skew: -3_600)
        let fast = try Process(url: url, skew: 3_600)
        let hold = Pipeline.dispatcherLeaseSeconds
        var now = slow.clock.now()
        #expect(try slow.campaigns.holdDispatcher(ingest: "slow", now: now, until: now + hold))
        now = fast.clock.now()
        #expect(try fast.campaigns.holdDispatcher(ingest: "fast", now: now, until: now + hold) == false)
        #expect(try fast.campaigns.dispatcherHolder(now: now) == "slow")

        now = slow.clock.now()
        let heldUntil = now + hold
        #expect(try slow.campaigns.holdDispatcher(ingest: "slow", now: now, until: heldUntil))
        #expect(try fast.campaigns.holdDispatcher(ingest: "fast", now: fast.clock.now(), until: fast.clock.now() + hold) == false)
        #expect(Self.wait(seconds: Double(hold) + 10) { fast.clock.now() > heldUntil })
        now = fast.clock.now()
        #expect(try fast.campaigns.holdDispatcher(ingest: "fast", now: now, until: now + hold))
        #expect(try slow.campaigns.dispatcherHolder(now: slow.clock.now()) == "fast")
    }

    /// With the server stopped, measuring again fails promptly and the clock keeps its last offset;
    /// readings, each of which starts a measurement here, go on without waiting for one. Once the
    /// server is back, measurements succeed again.
    @Test func aFailedMeasurementKeepsTheLastOffset() throws {
        let server = try PostgresServer()
        let process = try Process(url: server.url, skew: 3_600, remeasureSeconds: 0)
        let clock = process.clock
        #expect(abs(clock.offset + 3_600) < 1)

        server.stop()
        let measured = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let result = clock.measure()
            measured.withLock { $0 = result }
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 30) == .success, "a measurement with the server stopped did not end within 30 s")
        #expect(measured.withLock { $0 } == false)
        #expect(abs(clock.offset + 3_600) < 1)
        for _ in 0..<20 {
            let before = SystemClock().preciseNow()
            let reading = clock.preciseNow()
            let after = SystemClock().preciseNow()
            #expect(before - 1 < reading && reading < after + 1, "reading \(reading) outside \(before)…\(after)")
        }
        #expect(Self.wait(seconds: 30) { !clock.measuring.load(ordering: .relaxed) }, "a background measurement did not end")
        #expect(abs(clock.offset + 3_600) < 1)

        try server.start()
        // The pool retries the server at most once per back-off (up to 5 s).
        #expect(Self.wait(seconds: 15) { clock.measure() })
        #expect(abs(clock.offset + 3_600) < 1)
    }
}
