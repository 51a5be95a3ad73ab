/// Counts and latencies of one method.
struct MethodStats: Equatable {
    var ok = 0
    var errors: [ErrorKind: Int] = [:]
    /// Latencies of every request that got an HTTP reply (successful or not).
    var latency = LatencyHistogram()

    var failed: Int { errors.values.reduce(0, +) }
    var requests: Int { ok + failed }

    mutating func merge(_ other: MethodStats) {
        ok += other.ok
        errors.merge(other.errors, uniquingKeysWith: +)
        latency.merge(other.latency)
    }
}
