import Testing
import Core
@testable import Postgres
import TestSupport

/// A shard's page query is planned each time it runs: a plan cached while `deliveries` was empty
/// (a new or emptied table, analyzed as empty) scans the whole table for each target once the
/// campaign has filled it.
@Suite struct PostgresPagePlanTests {
    @Test func thePageQueryDoesNotKeepAPlanMadeWhileDeliveriesWasEmpty() throws {
        // A server of its own: on the shared one, other tests' schema changes can overflow this
        // session's invalidation queue, which drops every cached plan, the one this test needs
        // to see kept included.
        let server = try PostgresServer()
        let url = try server.makeSchema()
        let database = try PostgresDatabase(settings: PostgresConnectionSettings(url: url), poolSize: 2, acquireTimeoutMilliseconds: 5000,
                                            apps: [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")])
        let devices = PostgresDeviceStore(database: database)
        for index in 0..<300 {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H\(index)", pushToken: "tok\(index)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 1), tags: []), now: 1_000)
        }
        // No shard is claimed: the work is made here, over every device, so that nothing writes
        // to deliveries but the test.
        let appID = try database.appID("APP-1")
        let work = ShardWork(shardID: 1, messageID: 1, messageCode: "M-1", hash: "h", app: "APP-1", appID: appID,
                             spec: MessageSpec(content: ["default": "Hi"]), firstDevice: 1, lastDevice: Int64.max,
                             timezoneFilter: .none, attempts: 1, attemptedThrough: nil)
        let (sql, values) = PostgresCampaignStore.targetQuery(work, after: 0, through: work.lastDevice, limit: 250,
                                                             sentSince: (0, 0))
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        try connection.execute("VACUUM ANALYZE deliveries")
        // The server's autovacuum would analyze deliveries once the test fills it, which drops the
        // cached plan this test needs to see kept; the table is left to the test alone.
        try connection.execute("ALTER TABLE deliveries SET (autovacuum_enabled = off)")

        /// Runs the page query; how many scans of all of deliveries it made (the counter of this
        /// connection's scans not yet reported, read before and after).
        func deliveriesScanned(plannedEachTime: Bool) throws -> Int64 {
            func scans() throws -> Int64 {
                try connection.first("SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = 'deliveries'::regclass") { $0.int(0) } ?? -1
            }
            return try connection.transaction {
                let before = try scans()
                #expect(try connection.rows(sql, values, plannedEachTime: plannedEachTime) { $0.int(0) }.count == 250)
                return try scans() - before
            }
        }
        // Cached: after five runs planned for their values, the sixth makes the generic plan,
        // here while deliveries is empty.
        for _ in 0..<6 { _ = try deliveriesScanned(plannedEachTime: false) }
        try connection.run("""
            INSERT INTO deliveries (message_id, device_id, status, reason, created_at)
            SELECT 2, g, 'sent', NULL, 900 FROM generate_series(1, 20000) g
            """)
        // The scenario still makes PostgreSQL keep a stale plan (if it stops doing so, revisit
        // `plannedEachTime`), and planned each time the query scans nothing.
        #expect(try deliveriesScanned(plannedEachTime: false) > 0, "PostgreSQL kept the plan made while deliveries was empty")
        #expect(try deliveriesScanned(plannedEachTime: true) == 0)

        // The store's page reads, and its reads of due retries (a table as often empty), are planned
        // each time: however often they run, their one connection holds no prepared statement of them.
        let single = try PostgresDatabase(settings: PostgresConnectionSettings(url: url), poolSize: 1, acquireTimeoutMilliseconds: 5000,
                                          apps: [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")])
        let campaigns = PostgresCampaignStore(database: single)
        // A page that reads tags reads its windows the same way (no device has the tag).
        var tagged = work
        tagged.spec.conditions = [try ConditionFixture.parse(["Level", "NOTSET"])]
        for _ in 0..<7 {
            for work in [work, tagged] {
                #expect(try campaigns.cappedTargets(of: work, after: 0, limit: 250, since1: 0, since2: 0).targets.count == 250)
                #expect(try campaigns.targets(of: work, after: 0, limit: 250).count == 250)
            }
            #expect(try campaigns.dueRetries(of: work, now: 1_000, limit: 250).isEmpty)
        }
        let prepared = try single.read { connection in
            try connection.rows("SELECT statement FROM pg_prepared_statements") { $0.text(0) }
        }
        #expect(!prepared.contains { $0.contains("ORDER BY d.id LIMIT") || $0.contains("FROM delivery_retries r") }, "\(prepared)")
        server.stop()
    }
}
