import Synchronization
import Core

/// This ingest's part in choosing the one dispatcher among the ingests serving a database. `renew`
/// (called once a second) holds the role for `Pipeline.dispatcherLeaseSeconds` when nobody else
/// holds it, and notes who does. The answer of a look counts for the hold time from when it was
/// asked: past it, with no newer answer (the database is slow or unreachable), this ingest no
/// longer claims to dispatch, since another one may have taken the role over meanwhile.
final class DispatcherElection: Sendable {
    /// This ingest's name in the role (`ProcessIdentity.id`: host, pid and 4 hex digits).
    let id: String
    private let store: any DispatcherRoleStore
    private let clock: any Clock
    /// Seconds on a clock that never jumps (`monotonicSeconds`), for how long a look holds.
    private let monotonic: @Sendable () -> Double
    private let logger: Logger
    private let active = Atomic<Bool>(false)
    /// The ingest that held the role at the last look, nil when none did.
    private let holder = Lock<String?>(nil)
    /// Until when (on `monotonic`) the last successful look holds.
    private let lookHoldsUntil = Atomic<Double>(-.infinity)

    init(id: String, store: any DispatcherRoleStore, clock: any Clock, logger: Logger,
         monotonic: @escaping @Sendable () -> Double = monotonicSeconds) {
        self.id = id
        self.store = store
        self.clock = clock
        self.logger = logger
        self.monotonic = monotonic
    }

    /// Whether this ingest dispatches now (false while it stands by, and once its last renewal of
    /// the role is older than the hold time).
    var isDispatching: Bool { active.load(ordering: .relaxed) && isLookCurrent }

    /// The id of the ingest that dispatches, this one or another, as of the last look; nil while no
    /// ingest holds the role, or nobody can tell.
    var dispatchingIngest: String? { isLookCurrent ? holder.withLock { $0 } : nil }

    private var isLookCurrent: Bool { monotonic() < lookHoldsUntil.load(ordering: .relaxed) }

    /// Renews (or tries to take) the role. When the store cannot be asked, this ingest stops
    /// dispatching at once and the error is thrown: another ingest may take the role once its hold
    /// runs out.
    func renew() throws {
        let asked = monotonic()
        let now = clock.now()
        let holds: Bool
        let dispatcher: String?
        do {
            holds = try store.holdDispatcher(ingest: id, now: now, until: now + Pipeline.dispatcherLeaseSeconds)
            dispatcher = holds ? id : try store.dispatcherHolder(now: now)
        } catch {
            holder.withLock { $0 = nil }
            if active.exchange(false, ordering: .relaxed) {
                logger.warning("standing by: the dispatcher role cannot be renewed", ["ingest.id": id])
            }
            throw error
        }
        holder.withLock { $0 = dispatcher }
        lookHoldsUntil.store(asked + Double(Pipeline.dispatcherLeaseSeconds), ordering: .relaxed)
        guard holds != active.exchange(holds, ordering: .relaxed) else { return }
        if holds {
            logger.info("dispatching: this ingest hands out the work", ["ingest.id": id])
        } else {
            logger.warning("standing by: another ingest dispatches", ["ingest.id": id, "dispatcher": dispatcher ?? "?"])
        }
    }

    /// Gives the role up at once when this ingest holds it (a graceful stop), so that a standby
    /// takes over without waiting for the hold to run out.
    func resign() {
        guard active.exchange(false, ordering: .relaxed) else { return }
        try? store.releaseDispatcher(ingest: id)
    }
}
