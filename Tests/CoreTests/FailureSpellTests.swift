import Testing
@testable import Core

/// The rule that keeps a retrying loop's log short, with time and outcomes going in.
@Suite struct FailureSpellTests {
    /// A failure every 0.25 s for 59 s (a dispatcher while the database is down) is one line; a
    /// minute on, one reminder with the count; the first success ends the spell with its length.
    @Test func aSpellOfFailuresIsOneLineThenAReminderAMinuteThenOneRecovery() {
        var spell = FailureSpell(subject: "dispatcher")
        #expect(spell.noteSuccess(now: 99) == nil)
        #expect(spell.noteFailure(now: 100) == .began)
        let quiet = (1..<236).compactMap { spell.noteFailure(now: 100 + Double($0) * 0.25) }
        #expect(quiet.isEmpty)
        #expect(spell.noteFailure(now: 160) == .persists(failures: 237, seconds: 60))
        #expect(spell.noteFailure(now: 170) == nil)
        #expect(spell.noteSuccess(now: 172.5) == .ended(failures: 238, seconds: 72.5))
        #expect(spell.noteSuccess(now: 173) == nil)
    }

    /// After a recovery, the next failure starts a new spell: logged at once, counted from one.
    @Test func theNextSpellIsLoggedAfreshAndCountedFromOne() {
        var spell = FailureSpell(subject: "bulkSetTags runner", reminderInterval: 60)
        #expect(spell.noteFailure(now: 0) == .began)
        #expect(spell.noteFailure(now: 1) == nil)
        #expect(spell.noteSuccess(now: 2) == .ended(failures: 2, seconds: 2))
        #expect(spell.noteFailure(now: 3) == .began)
        #expect(spell.noteSuccess(now: 3.5) == .ended(failures: 1, seconds: 0.5))
    }

    @Test func secondsAreWrittenToATenth() {
        #expect(FailureSpell.tenths(12.46) == "12.5")
        #expect(FailureSpell.tenths(0.04) == "0.0")
        #expect(FailureSpell.tenths(3) == "3.0")
    }
}
