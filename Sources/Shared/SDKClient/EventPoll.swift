internal import CEventPoll
#if canImport(Glibc)
import Glibc
#endif

/// An epoll instance for one event loop thread: descriptors registered with a 64-bit tag (the
/// owner's index for them), waited on with a nanosecond timeout (`epoll_pwait2`). Level-triggered.
///
/// One owner thread; the epoll descriptor is closed exactly once, in `deinit`.
public final class EventPoll {
    private let fd: Int32
    private var events: UnsafeMutablePointer<epoll_event>
    private let capacity: Int

    /// What a registered descriptor is waited for.
    public struct Interest: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let readable = Interest(rawValue: EPOLLIN.rawValue)
        public static let writable = Interest(rawValue: EPOLLOUT.rawValue)
    }

    /// One readiness report: the tag given at registration, and what is ready. Errors and hang-ups
    /// count as both readable and writable, so the next read or write reports them.
    public struct Event {
        public let tag: UInt64
        public let readable: Bool
        public let writable: Bool
    }

    public init(capacity: Int = 256) {
        fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(fd >= 0, "epoll_create1 failed: errno \(errno)")
        self.capacity = capacity
        events = .allocate(capacity: capacity)
    }

    deinit {
        close(fd)
        events.deallocate()
    }

    /// Starts watching `descriptor`.
    public func add(_ descriptor: Int32, tag: UInt64, interest: Interest) {
        control(EPOLL_CTL_ADD, descriptor, tag: tag, interest: interest)
    }

    /// Changes what `descriptor` is watched for.
    public func modify(_ descriptor: Int32, tag: UInt64, interest: Interest) {
        control(EPOLL_CTL_MOD, descriptor, tag: tag, interest: interest)
    }

    /// Stops watching `descriptor` (call before closing it).
    public func remove(_ descriptor: Int32) {
        var event = epoll_event()
        epoll_ctl(fd, EPOLL_CTL_DEL, descriptor, &event)
    }

    private func control(_ operation: Int32, _ descriptor: Int32, tag: UInt64, interest: Interest) {
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = tag
        epoll_ctl(fd, operation, descriptor, &event)
    }

    /// Waits up to `timeoutNanoseconds` (nil: forever, 0: just look) and calls `handle` for each
    /// descriptor that is ready. Returns how many were.
    @discardableResult
    public func wait(timeoutNanoseconds: Int64?, _ handle: (Event) -> Void) -> Int {
        let count: Int32
        if let timeout = timeoutNanoseconds {
            let clamped = max(0, timeout)
            var spec = timespec(tv_sec: Int(clamped / 1_000_000_000), tv_nsec: Int(clamped % 1_000_000_000))
            count = epoll_pwait2(fd, events, Int32(capacity), &spec, nil)
        } else {
            count = epoll_pwait2(fd, events, Int32(capacity), nil, nil)
        }
        guard count > 0 else { return 0 }
        let errorBits = EPOLLERR.rawValue | EPOLLHUP.rawValue
        for index in 0..<Int(count) {
            let event = events[index]
            let bits = event.events
            handle(Event(tag: event.data.u64, readable: bits & (EPOLLIN.rawValue | errorBits) != 0,
                         writable: bits & (EPOLLOUT.rawValue | errorBits) != 0))
        }
        return Int(count)
    }
}
