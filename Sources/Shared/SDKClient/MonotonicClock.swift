#if canImport(Glibc)
import Glibc
#endif

/// Monotonic time in nanoseconds (`CLOCK_MONOTONIC`), for schedules and latencies.
public enum MonotonicClock {
    @inline(__always)
    public static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }
}
