internal import CEventPoll
#if canImport(Glibc)
import Glibc
#endif

/// Ends another thread's wait at once: an eventfd that the waiting thread watches in its poll
/// (`EventPoll`, or ZeroMQ's `zmq_poll` beside its sockets) and any thread signals. Signals that
/// come while nobody waits make the next wait return at once; several count as one until `reset`.
///
/// `@unchecked Sendable` invariant: the descriptor is set once and closed only in `deinit`, so no
/// signal ever writes to a closed or reused descriptor; `write` and `read` on an eventfd are safe
/// from any thread.
public final class Wakeup: @unchecked Sendable {
    /// The descriptor to watch for reading.
    public let fd: Int32

    public init() {
        fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(fd >= 0, "eventfd failed: errno \(errno)")
    }

    deinit { close(fd) }

    /// Wakes the wait in progress, or the next one; inside `deferringSignals` on this thread, when
    /// that ends.
    public func signal() {
        if let deferred = pthread_getspecific(Self.deferredKey) {
            Unmanaged<Deferred>.fromOpaque(deferred).takeUnretainedValue().add(self)
            return
        }
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Runs `body`, and makes the signals it gives on this thread when it ends, once per wakeup: a
    /// thread that hands many results to a few waiting threads (the SQLite writer answering a batch
    /// of requests from a few I/O loops) wakes each of them once, with all of its results, instead
    /// of once per result as each wakes and takes what was there. `body` must not wait for a thread
    /// it signals.
    public static func deferringSignals(_ body: () -> Void) {
        let deferred = Deferred()
        pthread_setspecific(deferredKey, Unmanaged.passUnretained(deferred).toOpaque())
        body()
        pthread_setspecific(deferredKey, nil)
        for wakeup in deferred.wakeups { wakeup.signal() }
    }

    /// The wakeups signalled inside one `deferringSignals`, each once, in the order first signalled.
    private final class Deferred {
        var wakeups: [Wakeup] = []
        func add(_ wakeup: Wakeup) {
            if !wakeups.contains(where: { $0 === wakeup }) { wakeups.append(wakeup) }
        }
    }

    /// The calling thread's `Deferred` while it runs `deferringSignals`.
    private static let deferredKey: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// Takes the signals back, so that the next wait waits; called by the waiting thread when its
    /// poll reported `fd` readable.
    public func reset() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }
}
