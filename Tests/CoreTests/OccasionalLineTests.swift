import Core
import Testing

/// The once-a-minute rule for repeatable events, against simulated time (monotonic seconds).
struct OccasionalLineTests {
    @Test func theFirstEventIsLoggedAtOnceThenOneLineAMinuteCountsTheRest() {
        var line = OccasionalLine()
        #expect(line.note(now: 1_000) == 1)
        // 500 more within the minute: nothing is due.
        for index in 1...500 { #expect(line.note(now: 1_000 + Double(index) / 10) == nil) }
        // The first after the minute covers those 500 and itself.
        #expect(line.note(now: 1_060) == 501)
        #expect(line.note(now: 1_061) == nil)
        // After a quiet spell the next event is logged at once again.
        #expect(line.note(now: 2_000) == 2)
        #expect(line.note(now: 2_060) == 1)
    }
}
