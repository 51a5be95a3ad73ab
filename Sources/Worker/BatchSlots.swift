import Foundation

/// The batches one application's provider may have on the network at once from this worker, shared
/// by the shards the worker runs side by side: a shard takes a slot for each batch it sends and
/// gives it back once the batch's outcomes are recorded. So the worker's unrecorded pushes for the
/// app never exceed the slots, whatever the number of shards.
///
/// `@unchecked Sendable` invariant: `free` and `waking` are read and written only with `condition`
/// locked.
final class BatchSlots: @unchecked Sendable {
    private let condition = NSCondition()
    private var free: Int
    /// Semaphores signalled once, at the next `give`, for shards that found no slot free.
    private var waking: [DispatchSemaphore] = []
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

    /// Takes one slot without waiting; when none is free, `wake` is signalled once at the next
    /// `give` (unless `stopWaking` withdraws it first), so that a shard can wait for either a slot
    /// or its own batches on one semaphore.
    func takeOne(orWake wake: DispatchSemaphore) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if free > 0 {
            free -= 1
            return true
        }
        if !waking.contains(where: { $0 === wake }) { waking.append(wake) }
        return false
    }

    /// Withdraws a `takeOne(orWake:)` notice that has not been signalled yet.
    func stopWaking(_ wake: DispatchSemaphore) {
        condition.lock()
        waking.removeAll { $0 === wake }
        condition.unlock()
    }

    /// Gives back `count` slots.
    func give(_ count: Int) {
        guard count > 0 else { return }
        condition.lock()
        free += count
        let woken = waking
        waking.removeAll()
        condition.broadcast()
        condition.unlock()
        for wake in woken { wake.signal() }
    }
}
