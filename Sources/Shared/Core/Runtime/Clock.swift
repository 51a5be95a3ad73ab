#if canImport(Glibc)
import Glibc
#endif

/// The time source that everything time-dependent takes, so tests can move time.
public protocol Clock: Sendable {
    /// Unix time in seconds.
    func now() -> Int64
    /// Unix time in seconds with its fraction, for measuring one clock against another (whole
    /// seconds unless the clock knows better).
    func preciseNow() -> Double
}

extension Clock {
    public func preciseNow() -> Double { Double(now()) }
}

/// The system's wall clock.
public struct SystemClock: Clock {
    public init() {}
    public func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec)
    }
    public func preciseNow() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

/// Monotonic seconds, for measuring intervals.
public func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
