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

    /// Wakes the wait in progress, or the next one.
    public func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Takes the signals back, so that the next wait waits; called by the waiting thread when its
    /// poll reported `fd` readable.
    public func reset() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }
}
