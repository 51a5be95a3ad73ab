/// One second of the run, as the report draws it and the JSON's series keeps it.
struct SecondSample: Equatable {
    /// One method's part of the second.
    struct Method: Equatable {
        var ok = 0
        var failed = 0
        /// Latencies of the replies in the second.
        var latency = SecondHistogram()

        var requests: Int { ok + failed }

        mutating func merge(_ other: Method) {
            ok += other.ok
            failed += other.failed
            latency.merge(other.latency)
        }
    }

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
    /// Indexed by `FleetMethod.rawValue`.
    var methods: [Method]

    var failed: Int { errors.values.reduce(0, +) }
    var requests: Int { ok + failed }
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
        methods = interval.methods.map { Method(ok: $0.ok, failed: $0.failed, latency: SecondHistogram($0.latency)) }
    }

    /// A second read back from a series, or merged from several runs' seconds: the percentiles come
    /// from the methods' second histograms (within 6.25 %), the maximum is its bucket's highest value.
    init(elapsed: Double, span: Double, methods: [Method], errors: [ErrorKind: Int]) {
        self.elapsed = elapsed
        self.span = span
        self.methods = methods
        self.errors = errors
        ok = methods.reduce(0) { $0 + $1.ok }
        let latency = methods.reduce(into: SecondHistogram()) { $0.merge($1.latency) }
        p50 = latency.value(atPercentile: 50)
        p90 = latency.value(atPercentile: 90)
        p99 = latency.value(atPercentile: 99)
        max = latency.value(atPercentile: 100)
    }
}
