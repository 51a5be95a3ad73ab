import Foundation
import Testing
@testable import Worker

/// An application's window shared by shards: a shard that finds no slot free is woken once by the
/// next slot given back, and not after it withdrew; a shard that waits for a slot gets one given back
/// meanwhile, or none after its wait.
@Suite struct BatchSlotsTests {
    @Test func aShardWithoutASlotIsWokenByTheNextOneGivenBack() {
        let slots = BatchSlots(capacity: 2)
        let wake = DispatchSemaphore(value: 0)
        #expect(slots.takeOne(orWake: wake))
        #expect(slots.takeOne(orWake: wake))
        #expect(!slots.takeOne(orWake: wake))
        #expect(wake.wait(timeout: .now()) == .timedOut)
        slots.give(1)
        #expect(wake.wait(timeout: .now() + 5) == .success)
        // Woken once: the next give does not signal again unless asked.
        #expect(slots.takeOne(orWake: wake))
        slots.give(1)
        #expect(wake.wait(timeout: .now() + 0.05) == .timedOut)
        #expect(slots.take(upTo: 2) == 1)
    }

    @Test func aWithdrawnWakeIsNotSignalled() {
        let slots = BatchSlots(capacity: 1)
        let wake = DispatchSemaphore(value: 0)
        #expect(slots.takeOne(orWake: wake))
        #expect(!slots.takeOne(orWake: wake))
        #expect(!slots.takeOne(orWake: wake))
        slots.stopWaking(wake)
        slots.give(1)
        #expect(wake.wait(timeout: .now() + 0.05) == .timedOut)
        #expect(slots.take(upTo: 1) == 1)
    }

    @Test func aWaitForASlotEndsWithOneGivenBackOrAfterItsTime() {
        let slots = BatchSlots(capacity: 1)
        #expect(slots.takeOne(waitingUpTo: 0))
        let started = Date()
        #expect(!slots.takeOne(waitingUpTo: 0.1))
        #expect(Date().timeIntervalSince(started) >= 0.09)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { slots.give(1) }
        #expect(slots.takeOne(waitingUpTo: 10))
        #expect(slots.take(upTo: 1) == 0)
    }
}
