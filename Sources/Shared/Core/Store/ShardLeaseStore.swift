/// The dispatcher's side of the shard lifecycle: due messages become shards, shards are leased to
/// workers, leases that ran out (or whose worker vanished) go back to the pool, and messages whose
/// shards are all finished are done.
public protocol ShardLeaseStore: Sendable {
    /// Splits every message that has come due into shards of at most `shardSize` device ids (at
    /// least 16 shards while they hold 1,000 ids or more); returns how many messages started.
    func activateDueMessages(now: Int64, shardSize: Int) throws(StoreError) -> Int

    /// Leases up to `count` ready shards to `worker` until `leaseUntil`.
    func leaseShards(worker: String, count: Int, now: Int64, leaseUntil: Int64) throws(StoreError) -> [Int64]

    /// Shards leased per worker right now.
    func leasedShardCounts() throws(StoreError) -> [String: Int]

    /// Returns leases that expired, or that belong to workers not in `liveWorkers`, to the pool.
    func releaseLeases(now: Int64, liveWorkers: Set<String>) throws(StoreError) -> Int

    /// Marks messages whose shards are all finished as done; returns how many.
    func completeMessages(now: Int64) throws(StoreError) -> Int
}
