/// One second of the run, as the report draws it.
struct SecondSample: Equatable {
    /// Seconds since the start at the end of the interval.
    var elapsed: Double
    /// Length of the interval in seconds.
    var span: Double
    var ok: Int
    var errors: [ErrorKind: Int]
    /// Latency percentiles of the replies in the interval, in microseconds (0 when none).
    var p50: Int64
    var p90: Int64
    var p99: Int64
    var max: Int64

    var requests: Int { ok + errors.values.reduce(0, +) }
    /// The middle of the interval, where charts draw it.
    var middle: Double { elapsed - span / 2 }
    var rate: Double { span > 0 ? Double(requests) / span : 0 }

    init(elapsed: Double, span: Double, interval: IntervalStats) {
        self.elapsed = elapsed
        self.span = span
        ok = interval.ok
        errors = interval.errors
        p50 = interval.latency.value(atPercentile: 50)
        p90 = interval.latency.value(atPercentile: 90)
        p99 = interval.latency.value(atPercentile: 99)
        max = interval.latency.isEmpty ? 0 : interval.latency.max
    }
}
