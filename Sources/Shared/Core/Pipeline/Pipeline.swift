/// The figures ingest and workers must agree on, in one place. Both processes read them from here,
/// so a worker and an ingest built from the same commit never disagree about a lease or a batch.
public enum Pipeline {
    /// The most device ids one campaign shard covers (small campaigns are cut into smaller shards).
    public static let shardSize = 20_000
    /// How long a shard lease lasts without a batch being recorded, in seconds: ingest leases for
    /// this long, and a worker extends the lease by as much with every batch it records.
    public static let leaseSeconds: Int64 = 30
    /// A worker whose heartbeat (one a second) has not arrived for this long is gone: ingest hands
    /// its shards and report batches to others.
    public static let workerSilenceSeconds = 5.0
    /// How long an ingest's hold on the dispatcher role lasts without renewal (it renews every
    /// second): a standby ingest takes over this long after the dispatching one died.
    public static let dispatcherLeaseSeconds: Int64 = 5
    /// ZeroMQ heartbeats on every queue connection, both sides (`QueueSocket.setHeartbeat`): a PING
    /// every `queueHeartbeatMilliseconds`, and a connection that carries nothing for
    /// `queueSilenceMilliseconds` is closed. TCP alone keeps the connection of a silent peer (a
    /// partition, a host gone) open for many minutes; with them, both sides notice within seconds.
    public static let queueHeartbeatMilliseconds: Int32 = 1_000
    public static let queueSilenceMilliseconds: Int32 = 3_000
    /// Shards a worker runs at once.
    public static let workerRunners: Int64 = 2
    /// Shards a worker holds, advertised in its heartbeats: those it runs and one waiting, so that a
    /// runner that finishes a shard starts the next at once instead of after a round trip to the
    /// dispatcher. A waiting shard's lease is not extended: if it runs out first, the dispatcher
    /// hands the shard to another worker and this one skips it.
    public static let workerCapacity: Int64 = workerRunners + 1
    /// Pushes a worker sends together. A worker keeps as many batches unrecorded for an app as cover
    /// its provider's window (a part of a batch counts as one), and two waiting for a stream
    /// (`delivery.max_in_flight` at most, two batches at least), whatever the shards it runs: a
    /// worker killed mid-campaign leaves at most that many pushes of each app with an unknown
    /// outcome.
    public static let deliveryBatchSize = 250
    /// Stored SDK reports per batch that ingest hands to a worker to count.
    public static let reportBatchSize: Int64 = 5_000
    /// Upper bounds, in seconds, of the provider latency histogram: workers fill the buckets and
    /// ingest's `/metrics` labels them.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
}
