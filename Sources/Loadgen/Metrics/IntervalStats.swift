/// What happened in one interval (about a second): across methods for the live line and the
/// report, and per method for the JSON's series.
struct IntervalStats {
    var ok = 0
    var errors: [ErrorKind: Int] = [:]
    var latency = LatencyHistogram()
    /// Indexed by `FleetMethod.rawValue`.
    var methods = [MethodStats](repeating: MethodStats(), count: FleetMethod.allCases.count)

    var failed: Int { errors.values.reduce(0, +) }

    mutating func merge(_ other: IntervalStats) {
        ok += other.ok
        errors.merge(other.errors, uniquingKeysWith: +)
        latency.merge(other.latency)
        for index in methods.indices { methods[index].merge(other.methods[index]) }
    }
}
