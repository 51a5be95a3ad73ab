import Core

/// The dispatching ingest's decisions about campaign shards, over the store: which messages start,
/// which leases go back to the pool, which messages are done, and which live worker gets each
/// ready shard. Sending a shard to its worker is the caller's.
struct ShardDispatch: Sendable {
    /// A live worker as the dispatcher sees it from its last heartbeat.
    struct Room: Sendable {
        let worker: String
        /// Shards the worker can hold at once (0 while it stops).
        let capacity: Int64
        /// Shards the worker says it holds.
        let jobsInFlight: Int64
    }

    /// What one round of housekeeping changed.
    struct Housekeeping: Sendable, Equatable {
        /// Messages that came due and were split into shards.
        var started: Int
        /// Leases that ran out or whose worker is not live, returned to the pool.
        var released: Int
        /// Messages whose shards are all finished, marked done.
        var done: Int

        /// Adds the changes of another round.
        mutating func add(_ other: Housekeeping) {
            (started, released, done) = (started + other.started, released + other.released, done + other.done)
        }
    }

    let store: any ShardLeaseStore & ShardStore
    /// Device ids per shard (`Pipeline.shardSize`).
    var shardSize = Pipeline.shardSize
    /// How long a shard's lease lasts (`Pipeline.leaseSeconds`).
    var leaseSeconds = Pipeline.leaseSeconds

    /// Starts due messages, returns the leases of expired leases and of workers not in
    /// `liveWorkers`, and completes finished messages, in that order.
    func housekeeping(now: Int64, liveWorkers: Set<String>) throws(StoreError) -> Housekeeping {
        let started = try store.activateDueMessages(now: now, shardSize: shardSize)
        let released = try store.releaseLeases(now: now, liveWorkers: liveWorkers)
        let done = try store.completeMessages(now: now)
        return Housekeeping(started: started, released: released, done: done)
    }

    /// Leases ready shards to the workers with room, one at a time to the worker with the most room
    /// (the smallest id among equals), so that every worker has a shard running before any gets one
    /// to keep waiting. A worker's room is its capacity less the larger of the shards it says it
    /// holds and those leased to it: a shard whose lease ran out while queued on the worker still
    /// takes its room. Each shard leased goes to `send`; when `send` throws, that shard's lease
    /// goes back to the pool and the worker gets nothing more this round. Returns the shards sent,
    /// in order, with their workers.
    func assign(to rooms: [Room], now: Int64,
                send: (_ worker: String, _ shard: Int64) throws -> Void) throws(StoreError) -> [(worker: String, shard: Int64)] {
        guard !rooms.isEmpty else { return [] }
        let leased = try store.leasedShardCounts()
        var free = Dictionary(rooms.map { ($0.worker, Int($0.capacity) - max(leased[$0.worker] ?? 0, Int($0.jobsInFlight))) },
                              uniquingKeysWith: { first, _ in first })
        var sent: [(worker: String, shard: Int64)] = []
        while let (worker, room) = free.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }), room > 0 {
            guard let shard = try store.leaseShards(worker: worker, count: 1, now: now, leaseUntil: now + leaseSeconds).first else {
                break
            }
            do {
                try send(worker, shard)
                free[worker] = room - 1
                sent.append((worker, shard))
            } catch {
                try store.releaseLease(shard: shard, worker: worker)
                free[worker] = 0
            }
        }
        return sent
    }
}
