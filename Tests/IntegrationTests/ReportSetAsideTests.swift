import Foundation
import Core
import Postgres
import SDKClient
import TestSupport
import Testing

/// On PostgreSQL, a report whose value the server refuses to store in the rollups must not block
/// its batch: the real `herald-worker` sets it aside (processed, logged, not counted) and counts
/// every valid report of the batch once. Herald's own limits leave no value that PostgreSQL
/// refuses, so a trigger refuses one screen name as an index entry over PostgreSQL's limit once
/// did (54000). SQLite has no such refusal, so this runs on PostgreSQL only, whatever the pass.
@Suite(.serialized, .fixedBackend("runs Herald on PostgreSQL in every pass: SQLite refuses no such report"))
struct ReportSetAsideTests {
    @Test func aReportPostgreSQLRefusesIsSetAsideAndTheRestOfItsBatchIsCountedOnce() throws {
        let herald = try HeraldProcesses(database: .postgres)
        let app = HeraldProcesses.appCode
        try herald.startIngest()
        let database = try PostgresConnection(PostgresConnectionSettings(url: try #require(herald.databaseURL)))
        try database.execute(
            """
            CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
              IF NEW.screen = 'Poison' THEN RAISE EXCEPTION 'index row size 3032 exceeds btree version 4 maximum 2704' USING ERRCODE = '54000'; END IF;
              RETURN NEW;
            END $$;
            CREATE TRIGGER refuse_poison BEFORE INSERT ON screen_days FOR EACH ROW EXECUTE FUNCTION refuse_poison();
            """)
        let now = Int64(Date().timeIntervalSince1970)
        func post(_ hwid: String, _ event: String, _ attributes: [String: JSON] = [:]) throws {
            try herald.ok("postEvent", ["application": .string(app), "hwid": .string(hwid), "device_type": 3, "event": .string(event),
                                        "attributes": .object(attributes), "timestampUTC": .int(now), "timestampCurrent": .int(now)])
        }
        // No worker yet: the valid reports and the bad one between them wait in one batch.
        try post("a-1", "Checkout")
        try post("a-2", "Checkout")
        try post("bad-1", "PW_ScreenOpen", ["screen_name": "Poison"])
        try post("a-3", "Checkout")
        try post("a-1", "PW_ScreenOpen", ["screen_name": "Home"])

        try herald.startWorker()
        try herald.waitForReportsProcessed(timeout: 30)
        #expect(try herald.count("SELECT count(*) FROM reports") == 5)
        #expect(try herald.count("SELECT sum(count) FROM event_days") == 4, "each valid report counted once, the bad one not")
        let today = now - now % 86_400
        let response = try herald.client.request("GET", "/api/v1/apps/\(app)/events?from=\(today)&to=\(today + 86_400)",
                                                 headers: [("Authorization", "Token shop-secret")])
        let stats = try JSON.parse(response.body)
        #expect(stats["events"] == [["name": "Checkout", "count": 3, "devices": 3], ["name": "PW_ScreenOpen", "count": 1, "devices": 1]])
        #expect(stats["screens"] == [["screen_name": "Home", "count": 1]])
        let worker = try String(contentsOfFile: herald.workerLogPath(0), encoding: .utf8)
        #expect(worker.contains("WARNING") && worker.contains("report set aside") && worker.contains("report.id=3"), "\(worker.suffix(2000))")
        #expect(!worker.contains("report batch failed"), "\(worker.suffix(2000))")
        try herald.waitForMetrics { $0.contains("herald_reports_set_aside_total 1\n") && $0.contains("herald_reports_processed_total 5\n") }
    }
}
