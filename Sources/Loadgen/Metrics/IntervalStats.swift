/// What happened in one interval (about a second) across methods: for the live line and the report.
struct IntervalStats {
    var ok = 0
    var errors: [ErrorKind: Int] = [:]
    var latency = LatencyHistogram()

    var failed: Int { errors.values.reduce(0, +) }

    mutating func merge(_ other: IntervalStats) {
        ok += other.ok
        errors.merge(other.errors, uniquingKeysWith: +)
        latency.merge(other.latency)
    }
}
