import Synchronization
import Core
#if canImport(Glibc)
import Glibc
#endif

/// What the registration batcher's thread gathers while it runs a request's work (see
/// `RegistrationBatcher`): the registrations the work makes, which join the next batch, and
/// whether the work reached the database in any other way, which is refused before its first
/// statement so that the request can run again on a thread that may block.
///
/// `@unchecked Sendable` invariant: `gathering`, `items` and `refused` are touched only on the
/// batcher thread (the one that called `adoptCurrentThread`); other threads only compare its id.
final class RequestCollector: @unchecked Sendable {
    private let thread = Atomic<UInt>(0)
    private var gathering = false
    private var items: [RegistrationBatcher.Item] = []
    private var refused = false

    /// Makes the calling thread the batcher thread.
    func adoptCurrentThread() {
        thread.store(UInt(pthread_self()), ordering: .relaxed)
    }

    /// True inside `gather`, on the batcher thread.
    private var isGathering: Bool { UInt(pthread_self()) == thread.load(ordering: .relaxed) && gathering }

    /// Runs `work`; returns the registrations it made, and whether it was refused (then the
    /// registrations are dropped: the work runs again elsewhere).
    func gather(_ work: () -> Void) -> (items: [RegistrationBatcher.Item], refused: Bool) {
        (gathering, items, refused) = (true, [], false)
        work()
        defer { (gathering, items, refused) = (false, [], false) }
        return (refused ? [] : items, refused)
    }

    /// True when `item` joins the batch being gathered (the caller is a request's work on the
    /// batcher thread, which must not wait for its own batch).
    func collect(_ item: RegistrationBatcher.Item) -> Bool {
        guard isGathering else { return false }
        if !refused { items.append(item) }
        return true
    }

    /// Throws when a request's work on the batcher thread is about to reach the database.
    func refuseDatabaseAccess() throws(StoreError) {
        guard isGathering else { return }
        refused = true
        throw .backend(BackendFailure(backend: "postgres", code: 0, message: "this request runs on a request thread",
                                      context: "gathering a registration batch", isRetryable: true))
    }
}
