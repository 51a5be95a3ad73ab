import Core
import StoreCore

/// `AnalyticsStore` over the `reports` table and the per-day rollups workers build from it, with
/// the SQLite backend's semantics (`SQLiteAnalyticsStore` describes them). Workers that process
/// overlapping ranges at once each take the reports they count with `FOR UPDATE SKIP LOCKED`, so
/// that every report is counted by exactly one of them.
public final class PostgresAnalyticsStore: SQLAnalyticsStore {
    public let database: PostgresDatabase
    /// Where a report set aside by `processReports` is told of.
    let logger: Logger?

    public init(database: PostgresDatabase, logger: Logger? = nil) {
        self.database = database
        self.logger = logger
    }

    // MARK: Processing (workers)

    public func reportBacklog() throws(StoreError) -> ReportBacklog {
        try database.read { connection in
            // ORDER BY … LIMIT 1 rather than min(): the plan, made once (the statement has no
            // parameters), may not count the whole backlog when it was made while the table was empty.
            try connection.first(
                """
                SELECT (SELECT id FROM reports WHERE processed_at IS NULL ORDER BY id LIMIT 1),
                  (SELECT id FROM reports ORDER BY id DESC LIMIT 1)
                """
            ) { ReportBacklog(firstUnprocessed: $0.optionalInt(0), last: $0.optionalInt(1) ?? 0) } ?? ReportBacklog(firstUnprocessed: nil, last: 0)
        }
    }

    public func processReports(after first: Int64, through last: Int64, now: Int64) throws(StoreError) -> ReportsProcessed {
        try database.write { transaction in
            let connection = transaction.connection
            var ids: [Int64] = []
            var facts: [(id: Int64, fact: ReportFact)] = []
            _ = try connection.rows(
                """
                SELECT id, \(ReportRollup.columns) FROM reports WHERE id > $1 AND id <= $2 AND processed_at IS NULL
                ORDER BY id FOR UPDATE SKIP LOCKED
                """, [.integer(first), .integer(last)]
            ) { row in
                ids.append(row.int(0))
                let fact = ReportRollup.fact(row, base: 1)
                if fact.isEvent || fact.purchase != nil { facts.append((row.int(0), fact)) }
            }
            guard !ids.isEmpty else { return ReportsProcessed(count: 0) }
            let setAside = try storeRollups(facts, connection)
            // Attribution by payload hash; reports of unknown hashes stay in `reports` only.
            try connection.run(
                """
                INSERT INTO message_reports (message_id, kind, device_id)
                SELECT m.id, r.kind, d.id FROM reports r
                JOIN messages m ON m.hash = r.hash AND m.app_id = r.app_id
                JOIN devices d ON d.app_id = r.app_id AND d.hwid = r.hwid
                WHERE r.id = ANY($1::bigint[]) AND r.kind IN ('delivery', 'push_stat') AND r.hash IS NOT NULL
                ON CONFLICT DO NOTHING
                """, [.integers(ids)])
            let count = try connection.run("UPDATE reports SET processed_at = $1 WHERE id = ANY($2::bigint[])", [.integer(now), .integers(ids)])
            return ReportsProcessed(count: count, setAside: setAside)
        }
    }

    /// Adds the facts to the rollups. When the server refuses a value of one (`isDataError`: a
    /// report stored before today's limits, say), the whole range would fail each time it is
    /// handed out; so the facts are then added one at a time, and a report whose value is refused
    /// is set aside: left out of the rollups, marked processed with the rest, and logged. Each
    /// attempt runs under a savepoint of the batch's transaction, so a refused one leaves nothing
    /// behind and nothing is counted twice. Returns how many were set aside.
    private func storeRollups(_ facts: [(id: Int64, fact: ReportFact)], _ connection: PostgresConnection) throws -> Int {
        var rollup = ReportRollup()
        for (_, fact) in facts { rollup.add(fact) }
        guard try Self.refusal(connection, { try rollup.store(connection) }) != nil else { return 0 }
        var setAside = 0
        for (id, fact) in facts {
            var single = ReportRollup()
            single.add(fact)
            if let refusal = try Self.refusal(connection, { try single.store(connection) }) {
                setAside += 1
                logger?.warning("report set aside: PostgreSQL refuses a value it counts; it is marked processed and left out of the statistics",
                                ["report.id": String(id), "postgres.sqlstate": refusal.sqlState, "error": String(refusal.message.prefix(200))])
            }
        }
        return setAside
    }

    /// Runs `body` under a savepoint: nil when it succeeds; the server's refusal of a value, with
    /// `body`'s writes undone, when it fails with a data error. Any other error is thrown.
    private static func refusal(_ connection: PostgresConnection, _ body: () throws -> Void) throws -> PostgresError? {
        try connection.execute("SAVEPOINT rollup")
        do {
            try body()
        } catch let error as PostgresError where error.isDataError {
            try connection.execute("ROLLBACK TO SAVEPOINT rollup")
            try connection.execute("RELEASE SAVEPOINT rollup")
            return error
        }
        try connection.execute("RELEASE SAVEPOINT rollup")
        return nil
    }

    public func pruneReports(receivedBefore before: Int64, limit: Int) throws(StoreError) -> Int {
        try database.write { transaction in
            let connection = transaction.connection
            guard let bound = try AnalyticsQueries.firstReport(receivedFrom: before, connection) else { return 0 }
            return try connection.run(
                "DELETE FROM reports WHERE id IN (SELECT id FROM reports WHERE id < $1 AND processed_at IS NOT NULL ORDER BY id LIMIT $2)",
                [.integer(bound), .integer(Int64(limit))])
        }
    }

    // MARK: Reading

    public func eventStatistics(app: String, from: Int64, to: Int64) throws(StoreError) -> EventStatistics {
        let appID = try database.appID(app)
        let window = StatisticsWindow(from: from, to: to)
        return try database.snapshot { connection in
            var rollup = try ReportRollup.load(connection, app: appID, days: window.days.first, window.days.end)
            _ = try connection.rows(Self.raw, [.integer(appID), .integer(from), .integer(to), .integer(window.fullStart),
                                               .integer(window.fullEnd)]) { rollup.add(ReportRollup.fact($0)) }
            return rollup.statistics
        }
    }

    /// The reports a window reads raw: its partial days, and its whole days' unprocessed reports
    /// (through the backlog's own index). Parameters: $1 app id, $2 from, $3 to, $4 / $5 the whole
    /// days' start and end.
    static let raw = """
        SELECT \(ReportRollup.columns) FROM reports
        WHERE app_id = $1 AND kind IN ('event', 'purchase') AND occurred_at >= $2 AND occurred_at < $4
        UNION ALL
        SELECT \(ReportRollup.columns) FROM reports
        WHERE app_id = $1 AND kind IN ('event', 'purchase') AND occurred_at >= $5 AND occurred_at < $3
        UNION ALL
        SELECT \(ReportRollup.columns) FROM reports
        WHERE processed_at IS NULL AND app_id = $1 AND kind IN ('event', 'purchase') AND occurred_at >= $4 AND occurred_at < $5
        """
}
