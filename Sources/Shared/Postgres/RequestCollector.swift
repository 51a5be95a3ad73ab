import Synchronization
import Core
#if canImport(Glibc)
import Glibc
#endif

/// What the device write batcher's lanes gather while they run a request's work (see
/// `DeviceWriteBatcher`): the writes the work makes (devices, their tags, reports), which join the
/// lane's batch, and whether the work reached the database in any other way, which is refused
/// before its first statement so that the request can run again on a thread that may block.
///
/// `@unchecked Sendable` invariant: a slot's `gathering`, `items` and `refused` are touched only on
/// the thread that adopted it (`adoptCurrentThread`); other threads only compare its thread id.
final class RequestCollector: @unchecked Sendable {
    private final class Slot {
        let thread = Atomic<UInt>(0)
        var gathering = false
        var items: [DeviceWriteBatcher.Item] = []
        var refused = false
    }

    private let slots: [Slot]

    /// A collector for `threads` lanes.
    init(threads: Int) {
        slots = (0..<threads).map { _ in Slot() }
    }

    /// Makes the calling thread lane `index`.
    func adoptCurrentThread(_ index: Int) {
        slots[index].thread.store(UInt(pthread_self()), ordering: .relaxed)
    }

    /// The calling lane's slot, inside `gather`; nil on any other thread.
    private var gathering: Slot? {
        let current = UInt(pthread_self())
        return slots.first { $0.thread.load(ordering: .relaxed) == current && $0.gathering }
    }

    /// Runs `work` on the calling lane; returns the writes it made, and whether it was refused
    /// (then the writes are dropped: the work runs again elsewhere).
    func gather(_ work: () -> Void) -> (items: [DeviceWriteBatcher.Item], refused: Bool) {
        let current = UInt(pthread_self())
        guard let slot = slots.first(where: { $0.thread.load(ordering: .relaxed) == current }) else {
            preconditionFailure("gather runs on a lane thread")
        }
        (slot.gathering, slot.items, slot.refused) = (true, [], false)
        work()
        defer { (slot.gathering, slot.items, slot.refused) = (false, [], false) }
        return (slot.refused ? [] : slot.items, slot.refused)
    }

    /// True when `items` join the batch being gathered (the caller is a request's work on a lane,
    /// which must not wait for its own batch).
    func collect(_ items: [DeviceWriteBatcher.Item]) -> Bool {
        guard let slot = gathering else { return false }
        if !slot.refused { slot.items += items }
        return true
    }

    /// Throws when a request's work on a lane is about to reach the database.
    func refuseDatabaseAccess() throws(StoreError) {
        guard let slot = gathering else { return }
        slot.refused = true
        throw .deferred
    }
}
