import Synchronization
import Testing
import Core
import TestSupport
@testable import Ingest

/// Two ingests' elections over one real SQLite store, with the wall clock and the monotonic clock
/// moved by hand.
@Suite struct DispatcherElectionTests {
    let fixture: SQLiteStoreFixture
    let clock = ManualClock(1_000)
    /// Seconds on the monotonic clock both elections read.
    let monotonic = MonotonicSeconds()

    init() throws { fixture = try SQLiteStoreFixture() }

    func election(_ id: String) -> DispatcherElection {
        DispatcherElection(id: id, store: fixture.backend.campaigns, clock: clock, logger: .silent,
                           monotonic: { [monotonic] in monotonic.seconds.withLock { $0 } })
    }

    func wait(_ seconds: Double) { monotonic.seconds.withLock { $0 += seconds } }

    @Test func oneIngestDispatchesAndAStandbyTakesOverOnceItStopsRenewing() throws {
        let a = election("a"), b = election("b")
        #expect(!a.isDispatching && a.dispatchingIngest == nil, "nobody has looked yet")
        try a.renew()
        try b.renew()
        #expect(a.isDispatching && !b.isDispatching)
        #expect(a.dispatchingIngest == "a" && b.dispatchingIngest == "a")

        // a stops renewing: its last look holds for the hold time, then it claims nothing.
        wait(Double(Pipeline.dispatcherLeaseSeconds) - 0.5)
        #expect(a.isDispatching)
        wait(0.5)
        #expect(!a.isDispatching && a.dispatchingIngest == nil)

        // b takes the role once a's hold has run out in the store, not before.
        clock.advance(Pipeline.dispatcherLeaseSeconds)
        try b.renew()
        #expect(!b.isDispatching && b.dispatchingIngest == "a")
        clock.advance(1)
        try b.renew()
        #expect(b.isDispatching && b.dispatchingIngest == "b")

        // a comes back and stands by.
        try a.renew()
        #expect(!a.isDispatching && a.dispatchingIngest == "b")
    }

    @Test func aResigningHolderHandsTheRoleOverAtOnceAndAStandbyResigningChangesNothing() throws {
        let a = election("a"), b = election("b")
        try a.renew()
        try b.renew()
        b.resign()
        try a.renew()
        #expect(a.isDispatching, "b never held the role")

        a.resign()
        #expect(!a.isDispatching)
        try b.renew()
        #expect(b.isDispatching && b.dispatchingIngest == "b", "no wait for a's hold to run out")
    }
}

/// A monotonic clock the test moves by hand.
final class MonotonicSeconds: Sendable {
    let seconds = Mutex<Double>(50)
}
