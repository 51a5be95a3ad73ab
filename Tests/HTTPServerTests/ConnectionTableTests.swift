import Core
@testable import HTTPServer
import Testing

/// The deadline and limit rules, at chosen instants (no sockets, no waiting).
@Suite struct ConnectionTableTests {
    func table(limit: Int = 3, header: Int = 20, idle: Int = 60, body: Int = 20, rate: Int = 500) -> ConnectionTable {
        var settings = HTTPSettings()
        settings.connectionLimit = limit
        settings.headerTimeoutSeconds = header
        settings.idleTimeoutSeconds = idle
        settings.bodyTimeoutSeconds = body
        settings.bodyMinBytesPerSecond = rate
        return ConnectionTable(limits: ConnectionTable.Limits(settings))
    }

    /// The sockets `table` reports overdue at `now`.
    func due(_ table: inout ConnectionTable, at now: Double) -> [Int32] { table.overdue(now: now).map(\.fd) }

    @Test func headersAreDueAtTheHeaderDeadlineAndAKeptAliveConnectionAtTheIdleTimeout() {
        var table = table()
        let fresh = table.open(fd: 10, now: 0).id
        let kept = table.open(fd: 11, now: 0).id
        let admitted = table.headersComplete(kept, now: 1)
        #expect(admitted)
        table.busy(kept)
        table.answered(kept, now: 2)
        #expect(due(&table, at: 19.9) == [])
        #expect(due(&table, at: 20) == [10])
        #expect(due(&table, at: 61.9) == [], "a cut connection is reported once; the kept one has until 2 + 60")
        #expect(due(&table, at: 62) == [11])
        table.close(fresh)
        table.close(kept)
        #expect(table.count == 0 && table.occupied == 0)
    }

    @Test func anIdFromAnEarlierConnectionOnTheSameSocketChangesNothing() {
        var table = table(header: 20)
        let earlier = table.open(fd: 10, now: 0).id
        table.close(earlier)
        let later = table.open(fd: 10, now: 5).id
        #expect(later != earlier)
        let admitted = table.headersComplete(earlier, now: 6)
        #expect(admitted)
        table.busy(earlier)
        table.close(earlier)
        #expect(table.count == 1 && table.occupied == 1, "the later connection keeps its entry and slot")
        #expect(due(&table, at: 24.9) == [] && due(&table, at: 25) == [10], "its header deadline runs from 5, untouched")
        // A descriptor opened again without its close reported takes the place of the entry left on it.
        _ = table.open(fd: 10, now: 30)
        #expect(table.count == 1 && table.occupied == 1)
    }

    @Test func theBodyDeadlineGrowsWithEachByteAtTheMinimumRate() {
        var table = table(body: 20, rate: 500)
        let fast = table.open(fd: 10, now: 0).id
        let slow = table.open(fd: 11, now: 0).id
        let admitted = table.headersComplete(fast, now: 0) && table.headersComplete(slow, now: 0)
        #expect(admitted)
        table.received(fast, bytes: 5_000)
        for _ in 0..<10 { table.received(slow, bytes: 1) }
        #expect(due(&table, at: 20.1) == [11], "10 bytes earn 20 ms")
        #expect(due(&table, at: 29.9) == [], "5,000 bytes at 500 bytes/s earn 10 s")
        let cuts = table.overdue(now: 30)
        #expect(cuts.map(\.fd) == [10] && cuts.map(\.cut) == [.body])
    }

    @Test func aRequestInProgressHasNoDeadline() {
        var table = table(header: 1, body: 1)
        let id = table.open(fd: 10, now: 0).id
        let admitted = table.headersComplete(id, now: 0)
        #expect(admitted)
        table.busy(id)
        #expect(due(&table, at: 1_000) == [])
    }

    @Test func atTheLimitTheOldestNeverServedConnectionWaitingForHeadersGoesFirst() {
        var table = table(limit: 3)
        let kept = table.open(fd: 10, now: 0).id
        let admitted = table.headersComplete(kept, now: 0)
        #expect(admitted)
        table.busy(kept)
        table.answered(kept, now: 1)
        _ = table.open(fd: 11, now: 2)
        _ = table.open(fd: 12, now: 3)
        let admissions = [table.open(fd: 13, now: 4), table.open(fd: 14, now: 5), table.open(fd: 15, now: 6)].map(\.admission)
        #expect(admissions == [.evicting(fd: 11), .evicting(fd: 12), .evicting(fd: 13)])
        #expect(table.occupied == 3)
        #expect(due(&table, at: 6.5) == [], "evicted connections are not cut again")
        let next = table.open(fd: 16, now: 7).admission
        #expect(next == .evicting(fd: 14))
    }

    @Test func whenEverySlotHoldsARequestTheNewcomerIsRefusedUnlessASlotFreesUpInTime() {
        var table = table(limit: 2)
        let first = table.open(fd: 10, now: 0).id
        let second = table.open(fd: 11, now: 0).id
        let busy = table.headersComplete(first, now: 0) && table.headersComplete(second, now: 0)
        #expect(busy)
        let refused = table.open(fd: 12, now: 1)
        #expect(refused.admission == .overLimit)
        let refusedAdmitted = table.headersComplete(refused.id, now: 1)
        #expect(!refusedAdmitted)
        let lucky = table.open(fd: 13, now: 2)
        #expect(lucky.admission == .overLimit)
        table.close(first)
        let luckyAdmitted = table.headersComplete(lucky.id, now: 3)
        #expect(luckyAdmitted, "a slot freed before its headers completed")
        #expect(table.occupied == 2)
    }
}
