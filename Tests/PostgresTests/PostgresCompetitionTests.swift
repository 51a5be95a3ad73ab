import Foundation
import Synchronization
import Testing
import Core
@testable import Postgres
import TestSupport

/// Where processes compete for the same rows (several dispatchers leasing shards, several workers
/// folding overlapping report ranges), each row goes to exactly one of them.
@Suite struct PostgresCompetitionTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
    let database: PostgresDatabase

    init() throws {
        database = try PostgresDatabase(settings: PostgresConnectionSettings(url: try PostgresServer.shared().makeSchema()), poolSize: 8,
                                        acquireTimeoutMilliseconds: 10_000, apps: Self.apps)
    }

    @Test func competingDispatchersNeverLeaseTheSameShard() throws {
        let devices = PostgresDeviceStore(database: database)
        let campaigns = PostgresCampaignStore(database: database)
        for index in 0..<2_000 {
            try devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H\(index)", pushToken: "t\(index)", gateway: nil,
                                                          attributes: DeviceAttributes(platform: 3), tags: []), now: 1)
        }
        var spec = MessageSpec(content: ["default": "Hi"])
        spec.schedule = MessageSpec.Schedule(sendAt: 1, perDeviceTimezone: false)
        _ = try campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: 1)
        #expect(try campaigns.activateDueMessages(now: 1, shardSize: 100) == 1)
        let leased = Mutex<[Int64]>([])
        let failures = Atomic<Int>(0)
        #expect(runConcurrently(6) { index in
            for _ in 0..<10 {
                do {
                    let shards = try campaigns.leaseShards(worker: "w\(index)", count: 2, now: 1, leaseUntil: 100)
                    leased.withLock { $0 += shards }
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
        })
        #expect(failures.load(ordering: .relaxed) == 0)
        let all = leased.withLock { $0 }
        #expect(all.count == 20 && Set(all).count == 20)
        #expect(try campaigns.leasedShardCounts().values.reduce(0, +) == 20)
    }

    @Test func workersFoldingOverlappingRangesCountEachReportOnce() throws {
        let devices = PostgresDeviceStore(database: database)
        let analytics = PostgresAnalyticsStore(database: database)
        let start: Int64 = 1_780_000_000 - 1_780_000_000 % 86_400
        let reports = (0..<3_000).map { index in
            SDKReport(kind: .event, app: "APP-1", hwid: "H\(index % 40)", userID: nil, platform: 3, name: index % 3 == 0 ? "Login" : "PW_ScreenOpen",
                      hash: nil, body: ["attributes": ["screen_name": .string("S\(index % 5)")]], timestampUTC: start + Int64(index * 50),
                      timestampCurrent: nil)
        }
        try devices.record(reports, now: start)
        let before = try analytics.eventStatistics(app: "APP-1", from: start, to: start + 3 * 86_400)
        let processed = Atomic<Int>(0)
        #expect(runConcurrently(6) { index in
            // Overlapping ranges, each covered by two or three workers.
            for range in [(0, 1_500), (1_000, 2_500), (2_000, 3_000)] where (index + range.0 / 1_000) % 2 == 0 || index < 3 {
                if let count = try? analytics.processReports(after: Int64(range.0), through: Int64(range.1), now: start).count {
                    processed.add(count, ordering: .relaxed)
                }
            }
        })
        _ = try analytics.processReports(after: 0, through: 3_000, now: start)
        #expect(try analytics.reportBacklog().firstUnprocessed == nil)
        #expect(processed.load(ordering: .relaxed) <= 3_000)
        let after = try analytics.eventStatistics(app: "APP-1", from: start, to: start + 3 * 86_400)
        #expect(after == before)
        #expect(after.events.map(\.count).reduce(0, +) == 3_000)
    }

    @Test func attributesCountAsSQLiteCastsThem() {
        #expect(ReportRollup.real(.string("12abc")) == 12 && ReportRollup.real(.string(" -1.5e2x")) == -150)
        #expect(ReportRollup.real(.string("abc")) == 0 && ReportRollup.real(.string("1e")) == 1 && ReportRollup.real(.string(".5")) == 0.5)
        #expect(ReportRollup.real(.bool(true)) == 1 && ReportRollup.real(.array([])) == 0 && ReportRollup.real(.null) == nil)
        #expect(ReportRollup.extractedText(.int(5)) == "5" && ReportRollup.extractedText(.null) == nil)
    }
}
