import Testing
import Core
import SDKClient
@testable import SQLite
import TestSupport

/// The SQL a message's tag conditions become, run against a real SQLite file.
@Suite struct TargetFilterTests {
    func parse(_ json: JSON, index: Int = 0) throws(ConditionError) -> TagCondition { try ConditionFixture.parse(json, index: index) }


    /// Shared statements number their parameters `$n`; SQLite reads them as `?n`, and a `$` that
    /// starts no number (a JSON path) is left as written.
    @Test func numberedParametersBecomePositionalAndJSONPathsStay() {
        #expect(SQLiteConnection.positional("SELECT $1, json_extract(x, '$.a') WHERE y = $2") == "SELECT ?1, json_extract(x, '$.a') WHERE y = ?2")
        #expect(SQLiteConnection.positional("SELECT 1") == "SELECT 1")
    }

    @Test func emptyConditionsMatchEverything() {
        let result = TargetFilter.sql(for: [], combinedWith: .and)
        #expect(result.sql == "1" && result.bindings.isEmpty)
    }

    @Test func valuesAreBoundNotInterpolated() throws {
        let result = TargetFilter.sql(for: [try parse(["City", "EQ", "x' OR 1 --"]), try parse(["Level", "BETWEEN", [1, 2.5]])],
                                      combinedWith: .or)
        #expect(!result.sql.contains("x'") && !result.sql.contains("2.5"))
        #expect(result.sql.contains(") OR ("))
        #expect(result.bindings == [.text("City"), .text("x' OR 1 --"), .text("Level"), .integer(1), .real(2.5)])
    }

    /// Devices with a seeded mix of tags in a real SQLite file; every condition's SQL must select
    /// exactly the devices a plain Swift evaluation selects.
    @Test func sqlSelectsWhatTheConditionsDescribe() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("t.sqlite")
        let store = try SQLiteDeviceStore(path: path, busyTimeoutMilliseconds: 1000,
                                          apps: [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")])
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 1000)
        defer { connection.close() }
        let appID = try #require(try connection.prepare("SELECT id FROM applications WHERE code = 'APP-1'").first { $0.int(0) })
        // A version cannot be inferred from a value: define the tag first.
        try connection.prepare("INSERT INTO tag_definitions (app_id, name, type, created_at) VALUES (?, 'Build', 7, 0)")
            .run([.integer(appID)])

        var rng = SplitMix64(seed: 20_240_201)
        let devices = try TargetingCases.devices(app: "APP-1", &rng)
        for device in devices { try store.registerDevice(device.registration, now: 1) }
        #expect(try store.getTags(app: "APP-1", hwid: "H0", userID: nil) == devices[0].tags)

        func selected(_ conditions: [TagCondition], _ op: ConditionsOperator) throws -> Set<String> {
            let filter = TargetFilter.sql(for: conditions, combinedWith: op)
            return Set(try connection.prepare("SELECT d.hwid FROM devices d WHERE d.app_id = ? AND (\(filter.sql))")
                .rows([.integer(appID)] + filter.bindings) { $0.text(0) })
        }
        func expected(_ conditions: [TagCondition], _ op: ConditionsOperator) -> Set<String> {
            TargetingCases.expected(devices, conditions, op)
        }

        var singles: [TagCondition] = []
        for json in TargetingCases.fixedConditions + (0..<300).map({ _ in TargetingCases.randomCondition(&rng) }) {
            singles.append(try parse(json))
        }
        var interesting = 0
        for condition in singles {
            let want = expected([condition], .and)
            if want.count > 0 && want.count < devices.count { interesting += 1 }
            #expect(try selected([condition], .and) == want, "\(condition)")
        }
        #expect(interesting > singles.count * 3 / 4)
        for round in 0..<300 {
            let picked = (0..<Int.random(in: 2...4, using: &rng)).compactMap { _ in singles.randomElement(using: &rng) }
            let op: ConditionsOperator = round % 2 == 0 ? .and : .or
            #expect(try selected(picked, op) == expected(picked, op), "\(op) \(picked)")
        }
        #expect(try selected([], .and).count == devices.count)

        // Each tag condition is a point lookup on the primary keys, never a scan of the tag tables.
        let filter = TargetFilter.sql(for: [try parse(["Level", "GTE", 3]), try parse(["Fav", "NOTIN", ["a"]])], combinedWith: .and)
        let plan = try connection.prepare("EXPLAIN QUERY PLAN SELECT d.hwid FROM devices d WHERE d.id BETWEEN ? AND ? AND (\(filter.sql))")
            .rows([.integer(1), .integer(100)] + filter.bindings) { $0.text(3) }
        #expect(plan.filter { $0.contains("SEARCH t USING PRIMARY KEY") || $0.contains("SEARCH i USING PRIMARY KEY") }.count == 3, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN t") || $0.hasPrefix("SCAN i") }, "\(plan)")
    }
}
