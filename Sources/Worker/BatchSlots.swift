import Foundation
import Core

/// The batches one application's provider may have on the network at once from this worker, shared
/// by the shards the worker runs side by side: a shard takes a slot for each batch it sends and
/// gives it back once the batch's outcomes are recorded. So the worker's unrecorded pushes for the
/// app never exceed the slots, whatever the number of shards.
final class BatchSlots: Sendable {
    private struct State {
        var free: Int
        /// Semaphores signalled once, at the next `give`, for shards that found no slot free.
        var waking: [DispatchSemaphore] = []
    }

    private let state: Lock<State>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Lock(State(free: self.capacity))
    }

    /// Takes up to `count` free slots without waiting; returns how many it took.
    func take(upTo count: Int) -> Int {
        state.withLock { state in
            let taken = min(count, state.free)
            state.free -= taken
            return taken
        }
    }

    /// Takes one slot, waiting up to `seconds` for one to be given back; false when none came free.
    func takeOne(waitingUpTo seconds: Double) -> Bool {
        let wake = DispatchSemaphore(value: 0)
        let deadline = DispatchTime.now() + seconds
        while !takeOne(orWake: wake) {
            if wake.wait(timeout: deadline) == .timedOut {
                stopWaking(wake)
                return false
            }
        }
        return true
    }

    /// Takes one slot without waiting; when none is free, `wake` is signalled once at the next
    /// `give` (unless `stopWaking` withdraws it first), so that a shard can wait for either a slot
    /// or its own batches on one semaphore.
    func takeOne(orWake wake: DispatchSemaphore) -> Bool {
        state.withLock { state in
            if state.free > 0 {
                state.free -= 1
                return true
            }
            if !state.waking.contains(where: { $0 === wake }) { state.waking.append(wake) }
            return false
        }
    }

    /// Withdraws a `takeOne(orWake:)` notice that has not been signalled yet.
    func stopWaking(_ wake: DispatchSemaphore) {
        state.withLock { $0.waking.removeAll { $0 === wake } }
    }

    /// Gives back `count` slots.
    func give(_ count: Int) {
        guard count > 0 else { return }
        let woken = state.withLock { state in
            state.free += count
            defer { state.waking.removeAll() }
            return state.waking
        }
        for wake in woken { wake.signal() }
    }
}
