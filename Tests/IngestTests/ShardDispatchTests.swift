import Testing
import Core
@testable import Ingest

/// The dispatcher's decisions about shards, over a real SQLite store: a campaign of 60 devices in
/// shards of 10 ids.
@Suite struct ShardDispatchTests {
    struct Unreachable: Error {}

    let fixture: SQLiteStoreFixture
    let dispatch: ShardDispatch
    let now: Int64 = 1_000

    init() throws {
        fixture = try SQLiteStoreFixture()
        var dispatch = ShardDispatch(store: fixture.backend.campaigns)
        dispatch.shardSize = 10
        self.dispatch = dispatch
        try fixture.campaign(devices: 60, now: now)
        #expect(try dispatch.housekeeping(now: now, liveWorkers: []) == .init(started: 1, released: 0, done: 0))
    }

    func room(_ worker: String, _ capacity: Int64, inFlight: Int64 = 0) -> ShardDispatch.Room {
        ShardDispatch.Room(worker: worker, capacity: capacity, jobsInFlight: inFlight)
    }

    @Test func shardsGoOneAtATimeToTheWorkerWithTheMostRoomAndLeasedShardsTakeRoom() throws {
        var sends: [String] = []
        let first = try dispatch.assign(to: [room("a", 2), room("b", 3), room("c", 1, inFlight: 1)], now: now) { worker, _ in
            sends.append(worker)
        }
        #expect(first.map(\.worker) == ["b", "a", "b", "a", "b"], "c is full; equal rooms go to the smaller id")
        #expect(sends == first.map(\.worker))
        #expect(Set(first.map(\.shard)).count == 5)
        #expect(try fixture.backend.campaigns.leasedShardCounts() == ["a": 2, "b": 3])

        // The heartbeats now say nothing is in flight: the leases still fill a and b, so the last shard goes to c.
        let second = try dispatch.assign(to: [room("a", 2), room("b", 3), room("c", 1)], now: now) { _, _ in }
        #expect(second.map(\.worker) == ["c"])
        #expect(try dispatch.assign(to: [room("d", 5)], now: now) { _, _ in }.isEmpty, "no ready shard is left")

        // a vanished: its leases go back to the pool, and another worker gets them.
        #expect(try dispatch.housekeeping(now: now, liveWorkers: ["b", "c"]) == .init(started: 0, released: 2, done: 0))
        #expect(try dispatch.assign(to: [room("d", 5)], now: now) { _, _ in }.count == 2)
    }

    @Test func aShardThatCannotBeSentGoesBackToThePoolAndItsWorkerGetsNoMore() throws {
        let sent = try dispatch.assign(to: [room("a", 4), room("b", 1)], now: now) { worker, _ in
            if worker == "a" { throw Unreachable() }
        }
        #expect(sent.map(\.worker) == ["b"])
        #expect(try fixture.backend.campaigns.leasedShardCounts() == ["b": 1])
        // The shard a could not take is ready again at once, with the four others.
        #expect(try dispatch.assign(to: [room("c", 10)], now: now) { _, _ in }.count == 5)
    }

    @Test func noWorkersNoLeases() throws {
        #expect(try dispatch.assign(to: [], now: now) { _, _ in }.isEmpty)
        #expect(try dispatch.assign(to: [room("a", 0)], now: now) { _, _ in }.isEmpty, "a stopping worker advertises no room")
        #expect(try fixture.backend.campaigns.leasedShardCounts().isEmpty)
    }
}
