import Testing
import Core
@testable import Ingest

/// Retention passes over a real SQLite store.
@Suite struct RetentionPassTests {
    @Test func aPassDeletesABatchOfWhatRanOutAndSaysWhetherMoreMayWait() throws {
        let fixture = try SQLiteStoreFixture()
        let devices = fixture.backend.devices
        var settings = RetentionSettings()
        settings.bulkJobsSeconds = 86_400
        for (id, finished) in [("old-1", Int64(1_000)), ("old-2", 1_000), ("recent", 50_000)] {
            try devices.createBulkTagJob(id: id, app: "APP-1", createMissingTags: false, devices: "[]", total: 0, now: finished)
            try devices.failBulkTagJob(id: id, reason: "test", now: finished)
        }
        let pass = RetentionPass(settings: settings, campaigns: fixture.backend.campaigns, bulkTags: devices,
                                 analytics: fixture.backend.analytics, logger: .silent, batch: 1)
        let now: Int64 = 1_000 + 86_400 + 1
        #expect(try pass.run(now: now), "a full batch went: more may wait")
        #expect(try devices.bulkTagJob(id: "old-1", errorLimit: 0) == nil)
        #expect(try devices.bulkTagJob(id: "old-2", errorLimit: 0) != nil, "one row a pass")
        #expect(try pass.run(now: now))
        #expect(try !pass.run(now: now), "nothing else has run out")
        #expect(try devices.bulkTagJob(id: "old-2", errorLimit: 0) == nil)
        #expect(try devices.bulkTagJob(id: "recent", errorLimit: 0) != nil, "finished less than a day before")
    }
}
