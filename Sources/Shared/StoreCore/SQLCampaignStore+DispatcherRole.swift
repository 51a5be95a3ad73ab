import Core

/// The dispatcher role on a SQL backend: one row in `dispatcher_lease`, taken over by an upsert
/// that changes it only for its holder or once its hold has run out.
extension SQLCampaignStore {
    public func holdDispatcher(ingest: String, now: Int64, until: Int64) throws(StoreError) -> Bool {
        try database.writing { connection in
            try connection.execute(
                """
                INSERT INTO dispatcher_lease (id, holder, until) VALUES (1, $1, $3)
                ON CONFLICT (id) DO UPDATE SET holder = $1, until = $3
                WHERE dispatcher_lease.holder = $1 OR dispatcher_lease.until < $2
                """, [.text(ingest), .integer(now), .integer(until)]) == 1
        }
    }

    public func releaseDispatcher(ingest: String) throws(StoreError) {
        try database.writing { connection in
            _ = try connection.execute("UPDATE dispatcher_lease SET until = 0 WHERE holder = $1", [.text(ingest)])
        }
    }

    public func dispatcherHolder(now: Int64) throws(StoreError) -> String? {
        try database.reading { connection in
            try connection.selectFirst("SELECT holder FROM dispatcher_lease WHERE until >= $1", [.integer(now)]) { $0.text(0) }
        }
    }
}
