import Core

/// Which stored reports are with which worker. Reports get ids in commit order, so the dispatcher
/// hands out id ranges `(after, through]` past a cursor, at most `perWorker` per worker, each full
/// (`Pipeline.reportBatchSize`) unless its reports have waited `gathering` seconds. Processing
/// a range is idempotent (it touches only reports not yet stamped), so a range whose worker went
/// away or stayed silent past `timeout` is simply given to another. Owned by ingest's dispatcher thread.
public struct ReportBatches: Sendable {
    public struct Batch: Sendable, Equatable {
        public var worker: String
        public let after: Int64
        public let through: Int64
        public var sentAt: Double
    }

    public static let perWorker = 2
    public static let timeout = 30.0
    /// How long a partial batch waits for more reports (a full one goes at once): under load every
    /// batch is full, and its rollup writes serve 5,000 reports instead of a few hundred.
    public static let gathering = 0.5

    public init() {}

    /// The highest id handed out; nil until the first backlog is seen.
    public private(set) var cursor: Int64?
    /// Unacknowledged batches by `after`.
    public private(set) var outstanding: [Int64: Batch] = [:]
    /// Reports processed, as the workers acknowledged them.
    public private(set) var processed: Int64 = 0
    /// Of those, reports set aside uncounted (the database refused a value they count).
    public private(set) var setAside: Int64 = 0
    /// Since when reports past the cursor have been waiting.
    private var waitingSince: Double?

    /// Takes a worker's word that it processed the batch starting after `after`; false (and nothing
    /// changes) unless that batch is outstanding with that worker.
    @discardableResult
    public mutating func acknowledged(worker: String, after: Int64, processed count: Int64, setAside asideCount: Int64 = 0) -> Bool {
        guard outstanding[after]?.worker == worker else { return false }
        outstanding[after] = nil
        processed += count
        setAside += asideCount
        return true
    }

    /// The batches to send now, given what is stored and which workers can take work.
    public mutating func assign(backlog: ReportBacklog, workers: [String], now: Double) -> [Batch] {
        let oldest = (backlog.firstUnprocessed ?? backlog.last + 1) - 1
        // A report below the cursor that no batch covers (its worker failed without a word, or
        // ingest restarted) is handed out again from there.
        if cursor == nil || (oldest < cursor! && !outstanding.values.contains { $0.after <= oldest && oldest < $0.through }) {
            cursor = oldest
        }
        var load = Dictionary(workers.map { ($0, 0) }, uniquingKeysWith: { first, _ in first })
        for batch in outstanding.values where load[batch.worker] != nil { load[batch.worker]! += 1 }
        func leastLoaded() -> String? {
            load.filter { $0.value < Self.perWorker }.min { ($0.value, $0.key) < ($1.value, $1.key) }?.key
        }
        var sends: [Batch] = []
        for var batch in outstanding.values.sorted(by: { $0.after < $1.after })
        where load[batch.worker] == nil || now - batch.sentAt > Self.timeout {
            guard let worker = leastLoaded() else { break }
            batch.worker = worker
            batch.sentAt = now
            load[worker]! += 1
            outstanding[batch.after] = batch
            sends.append(batch)
        }
        if let cursor, cursor < backlog.last { waitingSince = waitingSince ?? now } else { waitingSince = nil }
        while var after = cursor, after < backlog.last, let worker = leastLoaded() {
            after = max(after, oldest)
            let through = min(after + Pipeline.reportBatchSize, backlog.last)
            // Everything past the cursor was processed by batches handed out before (a restart).
            guard through > after else {
                cursor = after
                break
            }
            if through - after < Pipeline.reportBatchSize, now - (waitingSince ?? now) < Self.gathering { break }
            let batch = Batch(worker: worker, after: after, through: through, sentAt: now)
            load[worker]! += 1
            outstanding[after] = batch
            cursor = through
            waitingSince = through < backlog.last ? now : nil
            sends.append(batch)
        }
        return sends
    }
}
