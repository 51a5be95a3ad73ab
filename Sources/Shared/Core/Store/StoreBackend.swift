/// One open database and the stores over it: what ingest and workers are handed by
/// `Storage.open`, whichever backend the configuration chose.
public protocol StoreBackend: Sendable {
    var devices: any DeviceStore { get }
    var campaigns: any CampaignStore { get }
    var analytics: any AnalyticsStore { get }
    var richMedia: any RichMediaStore { get }

    /// Runs a whole request whose store writes must be durable before it is answered: `work` runs
    /// (its writes may share a transaction with other requests'), and `completion` receives its
    /// result only once those writes are committed, or `onFailure()` when the commit fails.
    func submitRequest<T: Sendable>(_ work: @escaping @Sendable () -> T, onFailure: @escaping @Sendable () -> T,
                                    completion: @escaping @Sendable (T) -> Void)

    /// Whether each read waits for a network round trip (PostgreSQL): a request that only reads is
    /// then better handed to `submitRead` than answered on an HTTP I/O thread, which could serve no
    /// one meanwhile. False for SQLite, whose reads are local and cheaper than a handoff.
    var readsWait: Bool { get }

    /// Runs `work`, which only reads, and hands its result to `completion`: on PostgreSQL on reader
    /// threads of its own (as many as the pool's connections), so that reads never wait in the
    /// writes' queues (they share the pool's connections with them); on SQLite on the calling thread.
    func submitRead<T: Sendable>(_ work: @escaping @Sendable () -> T, completion: @escaping @Sendable (T) -> Void)

    /// Writes a consistent copy of the whole database to `path` (a new file) while other processes
    /// keep reading and writing; returns its size in bytes.
    func backup(to path: String) throws(StoreError) -> Int64

    /// Why commits fail, while they do (for `/healthz`); nil while they succeed.
    var commitFailure: String? { get }

    /// Bytes the store's client library holds in this process: SQLite's page caches, statements and
    /// buffers; 0 for PostgreSQL, whose caches live in the server.
    var clientMemoryBytes: Int64 { get }

    /// Calls `handler` each time commits start failing (with the error) or succeed again (nil).
    func watchCommits(_ handler: @escaping @Sendable (String?) -> Void)

    /// The clock for every time this process writes or compares (shard leases, the dispatcher role,
    /// `created_at`): the database server's for PostgreSQL, whose processes may run on hosts whose
    /// own clocks disagree; the system's for SQLite, whose processes share one host. Logs through
    /// `logger` what it notices about this host's clock.
    func makeClock(logger: Logger) throws(StoreError) -> any Clock
}

/// A submitted request's result between its work and its commit, held as the call that hands it to
/// the request's completion. A backend's `submitRequest` is compiled for any result type, and a
/// `T?` kept instead would have its metadata looked up at run time on every request.
///
/// `@unchecked Sendable` invariant: `run` and `finish` are called by one thread, `run` first.
public final class PendingAnswer: @unchecked Sendable {
    @usableFromInline var deliver: (@Sendable () -> Void)?

    public init() {}

    /// Runs `work` and keeps its result for `completion`. Inlined, so that no generic call looks up
    /// `T`'s metadata.
    @inlinable
    public func run<T: Sendable>(_ work: () -> T, for completion: @escaping @Sendable (T) -> Void) {
        let value = work()
        deliver = { completion(value) }
    }

    /// Hands the kept result to its completion when the work's writes `committed`; otherwise, or
    /// when the work never ran, calls `failed`.
    @inlinable
    public func finish(committed: Bool, otherwise failed: () -> Void) {
        if committed, let deliver { deliver() } else { failed() }
    }
}
