import Testing
import Core
import SDKClient
@testable import Postgres
import TestSupport

/// The SQL a message's tag conditions become, run against a real PostgreSQL server: it must select
/// exactly what the reference semantics (shared with the SQLite backend's test) select.
@Suite struct PostgresTargetFilterTests {
    func parse(_ json: JSON) throws(ConditionError) -> TagCondition { try ConditionFixture.parse(json, index: 0) }

    /// The window's bounds are the second and third parameters, as in the page query.
    static let window = PostgresTargetFilter.Window(after: "$2", through: "$3")

    @Test func valuesAreBoundNotInterpolated() throws {
        var parameters = PostgresParameters([.integer(1), .integer(0), .integer(9)])
        let sql = PostgresTargetFilter.sql(for: [try parse(["City", "EQ", "x' OR 1 --"]), try parse(["Level", "BETWEEN", [1, 2.5]])],
                                           combinedWith: .or, app: "$1", window: Self.window, &parameters)
        #expect(!sql.contains("x'") && !sql.contains("2.5") && sql.contains(") OR ("))
        #expect(parameters.values == [.integer(1), .integer(0), .integer(9), .text("City"), .text("x' OR 1 --"), .text("Level"),
                                      .integer(1), .double(2.5)])
        #expect(sql.contains("$4") && sql.contains("$8") && !sql.contains("$9"))
    }

    @Test func sqlSelectsWhatTheConditionsDescribe() throws {
        let url = try PostgresServer.shared().makeSchema()
        let database = try PostgresDatabase(settings: PostgresConnectionSettings(url: url), poolSize: 2, acquireTimeoutMilliseconds: 5000,
                                            apps: [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")])
        let store = PostgresDeviceStore(database: database)
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        let appID = try database.appID("APP-1")
        // A version cannot be inferred from a value: define the tag first.
        try connection.run("INSERT INTO tag_definitions (app_id, name, type, created_at) VALUES ($1, 'Build', 7, 0)", [.integer(appID)])
        var rng = SplitMix64(seed: 20_240_201)
        let devices = try TargetingCases.devices(app: "APP-1", &rng)
        for device in devices { try store.registerDevice(device.registration, now: 1) }
        #expect(try store.getTags(app: "APP-1", hwid: "H0", userID: nil) == devices[0].tags)
        try connection.execute("ANALYZE")

        func selected(_ conditions: [TagCondition], _ op: ConditionsOperator, window: (Int64, Int64) = (0, Int64.max)) throws -> Set<String> {
            var parameters = PostgresParameters([.integer(appID), .integer(window.0), .integer(window.1)])
            let filter = PostgresTargetFilter.sql(for: conditions, combinedWith: op, app: "$1", window: Self.window, &parameters)
            let sql = "SELECT d.hwid FROM devices d WHERE d.app_id = $1 AND d.id > $2 AND d.id <= $3 AND (\(filter))"
            return Set(try connection.rows(sql, parameters.values) { $0.text(0) })
        }
        var singles: [TagCondition] = []
        for json in TargetingCases.fixedConditions + (0..<300).map({ _ in TargetingCases.randomCondition(&rng) }) {
            singles.append(try parse(json))
        }
        for condition in singles {
            #expect(try selected([condition], .and) == TargetingCases.expected(devices, [condition], .and), "\(condition)")
        }
        // Read in windows of 40 device ids, as a page reads them, each condition selects the same
        // devices: its tag rows are read in the device's own window (a NOT SET tag too).
        let last = try connection.first("SELECT max(id) FROM devices") { $0.int(0) } ?? 0
        for condition in singles {
            var union: Set<String> = []
            for from in stride(from: Int64(0), to: last, by: 40) { union.formUnion(try selected([condition], .and, window: (from, from + 40))) }
            #expect(union == TargetingCases.expected(devices, [condition], .and), "\(condition)")
        }
        for round in 0..<300 {
            let picked = (0..<Int.random(in: 2...4, using: &rng)).compactMap { _ in singles.randomElement(using: &rng) }
            let op: ConditionsOperator = round % 2 == 0 ? .and : .or
            #expect(try selected(picked, op) == TargetingCases.expected(devices, picked, op), "\(op) \(picked)")
        }
        #expect(try selected([], .and).count == devices.count)

        // Walking a window of device ids, each tag condition reads the window's tag rows once (a
        // hashed subplan, never a join of the tag rows), from an index of the tag tables, never a
        // scan of a whole table.
        var parameters = PostgresParameters([.integer(appID), .integer(1), .integer(100)])
        let filter = PostgresTargetFilter.sql(for: [try parse(["Level", "GTE", 3]), try parse(["Fav", "NOTIN", ["a"]])],
                                              combinedWith: .and, app: "$1", window: Self.window, &parameters)
        let walk = try connection.rows(
            "EXPLAIN SELECT d.hwid FROM devices d WHERE d.app_id = $1 AND d.id > $2 AND d.id <= $3 AND (\(filter)) ORDER BY d.id LIMIT 250",
            parameters.values) { $0.text(0) }.joined(separator: "\n")
        #expect(walk.contains("hashed SubPlan") && !walk.contains("Join"), "\(walk)")
        try connection.execute("SET enable_seqscan = off")
        let plan = try connection.rows("EXPLAIN SELECT d.hwid FROM devices d WHERE d.app_id = $1 AND d.id > $2 AND d.id <= $3 AND (\(filter))",
                                       parameters.values) { $0.text(0) }.joined(separator: "\n")
        #expect(plan.contains("on device_tags t") && plan.contains("on device_tag_items i"), "\(plan)")
        #expect(!plan.contains("Seq Scan on device_tag"), "\(plan)")
    }
}
