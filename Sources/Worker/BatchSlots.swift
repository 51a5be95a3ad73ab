import Foundation

/// The batches one application's provider may have on the network at once from this worker, shared
/// by the shards the worker runs side by side: a shard takes a slot for each batch it sends and
/// gives it back once the batch's outcomes are recorded. So the worker's unrecorded pushes for the
/// app never exceed the slots, whatever the number of shards.
///
/// `@unchecked Sendable` invariant: `free` is read and written only with `condition` locked.
final class BatchSlots: @unchecked Sendable {
    private let condition = NSCondition()
    private var free: Int
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        free = self.capacity
    }

    /// Takes up to `count` free slots without waiting; returns how many it took.
    func take(upTo count: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        let taken = min(count, free)
        free -= taken
        return taken
    }

    /// Takes one slot, waiting up to `seconds` for one; false when none came free.
    func takeOne(waitingUpTo seconds: Double) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let until = Date(timeIntervalSinceNow: seconds)
        while free == 0 {
            if !condition.wait(until: until) { return false }
        }
        free -= 1
        return true
    }

    /// Gives back `count` slots.
    func give(_ count: Int) {
        guard count > 0 else { return }
        condition.lock()
        free += count
        condition.broadcast()
        condition.unlock()
    }
}
