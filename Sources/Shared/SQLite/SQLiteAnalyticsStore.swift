import Core
import StoreCore

/// `AnalyticsStore` over the `reports` table and the per-day rollups workers build from it.
///
/// Ingest appends each report to `reports` before it answers the SDK. Workers then fold batches of
/// reports into the per-day tables (`ReportRollup`) and stamp them `processed_at`, in one
/// transaction per batch, so a batch processed twice counts once. A window `[from, to)` is read
/// from the rollups for the whole UTC days inside it, plus the raw reports of the partial days at
/// its edges and those not processed yet: every acknowledged report counts at once, however far
/// the workers lag. Distinct devices are `DeviceSketch`es: exact up to 512 per day and event, then
/// HyperLogLog estimates.
public final class SQLiteAnalyticsStore: SQLAnalyticsStore {
    public let database: SQLiteDatabase

    public init(database: SQLiteDatabase) {
        self.database = database
    }

    // MARK: Processing (workers)

    public func reportBacklog() throws(StoreError) -> ReportBacklog {
        try database.read { connection in
            try connection.prepare(
                "SELECT (SELECT min(id) FROM reports WHERE processed_at IS NULL), (SELECT max(id) FROM reports)"
            ).first { ReportBacklog(firstUnprocessed: $0.optionalInt(0), last: $0.optionalInt(1) ?? 0) } ?? ReportBacklog(firstUnprocessed: nil, last: 0)
        }
    }

    public func processReports(after first: Int64, through last: Int64, now: Int64) throws(StoreError) -> ReportsProcessed {
        let range: [SQLiteValue] = [.integer(first), .integer(last)]
        // Counted from a read snapshot, so that the write lock (which ingest's writer waits for) is
        // held only to store the sums; redone under the lock if another worker took part of the
        // range meanwhile (reports only ever turn from unprocessed to processed).
        let (counted, rollup) = try database.read { connection in
            try connection.readTransaction { (try Self.unprocessed(connection, range), try Self.rollup(connection, range)) }
        }
        return try database.write { writer in
            let connection = writer.connection
            let current = try Self.unprocessed(connection, range)
            guard current.count > 0 else { return ReportsProcessed(count: 0) }
            try (current == counted ? rollup : Self.rollup(connection, range)).store(connection)
            // Attribution by payload hash; reports of unknown hashes stay in `reports` only.
            try connection.prepare(
                """
                INSERT OR IGNORE INTO message_reports (message_id, kind, device_id)
                SELECT m.id, r.kind, d.id FROM reports r
                CROSS JOIN messages m ON m.hash = r.hash AND m.app_id = r.app_id
                CROSS JOIN devices d ON d.app_id = r.app_id AND d.hwid = r.hwid
                WHERE r.id > ?1 AND r.id <= ?2 AND r.processed_at IS NULL AND r.kind IN ('delivery', 'push_stat') AND r.hash IS NOT NULL
                """
            ).run(range)
            try connection.prepare("UPDATE reports SET processed_at = ?3 WHERE \(Self.batch)").run(range + [.integer(now)])
            return ReportsProcessed(count: connection.changes)
        }
    }

    public func pruneReports(receivedBefore before: Int64, limit: Int) throws(StoreError) -> Int {
        try database.write { writer in
            let connection = writer.connection
            guard let bound = try AnalyticsQueries.firstReport(receivedFrom: before, connection) else { return 0 }
            try connection.prepare(
                "DELETE FROM reports WHERE id IN (SELECT id FROM reports WHERE id < ? AND processed_at IS NOT NULL ORDER BY id LIMIT ?)"
            ).run([.integer(bound), .integer(Int64(limit))])
            return connection.changes
        }
    }

    /// Unprocessed reports with ids in `(?1, ?2]`.
    static let batch = "id > ?1 AND id <= ?2 AND processed_at IS NULL"

    /// How many reports of the range are unprocessed, and the sum of their ids.
    static func unprocessed(_ connection: SQLiteConnection, _ range: [SQLiteValue]) throws -> [Int64] {
        try connection.prepare("SELECT count(*), coalesce(sum(id), 0) FROM reports WHERE \(batch)")
            .first(range) { [$0.int(0), $0.int(1)] } ?? [0, 0]
    }

    static func rollup(_ connection: SQLiteConnection, _ range: [SQLiteValue]) throws -> ReportRollup {
        var rollup = ReportRollup()
        _ = try connection.prepare("SELECT \(ReportRollup.columns) FROM report_facts WHERE \(batch)").rows(range) { rollup.add($0) }
        return rollup
    }

    // MARK: Reading

    public func eventStatistics(app: String, from: Int64, to: Int64) throws(StoreError) -> EventStatistics {
        let appID = try database.appID(app)
        let window = StatisticsWindow(from: from, to: to)
        return try database.read { connection in
            try connection.readTransaction {
                var rollup = try ReportRollup.load(connection, app: appID, days: window.days.first, window.days.end)
                _ = try connection.prepare(Self.raw).rows([.integer(appID), .integer(from), .integer(to), .integer(window.fullStart),
                                                           .integer(window.fullEnd)]) { rollup.add($0) }
                return rollup.statistics
            }
        }
    }

    /// The reports a window reads raw: its partial days, and its whole days' unprocessed reports
    /// (found through the backlog's own index: the time index would walk every report of those
    /// days). Parameters: ?1 app id, ?2 from, ?3 to, ?4 / ?5 the whole days' start and end.
    static let raw = """
        SELECT \(ReportRollup.columns) FROM report_facts
        WHERE app_id = ?1 AND kind IN ('event', 'purchase') AND occurred_at >= ?2 AND occurred_at < ?4
        UNION ALL
        SELECT \(ReportRollup.columns) FROM report_facts
        WHERE app_id = ?1 AND kind IN ('event', 'purchase') AND occurred_at >= ?5 AND occurred_at < ?3
        UNION ALL
        SELECT \(ReportRollup.columns) FROM report_facts WHERE id IN (
          SELECT id FROM reports INDEXED BY reports_unprocessed WHERE processed_at IS NULL AND app_id = ?1
            AND kind IN ('event', 'purchase') AND occurred_at >= ?4 AND occurred_at < ?5)
        """
}
