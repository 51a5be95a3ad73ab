/// One method's latencies in one second of the series, in µs: log-linear buckets like
/// `LatencyHistogram`'s but 16 per power of two (values below 32 µs exact), so that a percentile
/// read from it is within 1/16 (6.25 %) of a value recorded, and a second of a long run costs a few
/// dozen numbers. Each of its buckets holds whole buckets of `LatencyHistogram`, so it is made from
/// one exactly, and merging two is adding their counts.
struct SecondHistogram: Equatable {
    static let subBucketBits = 4

    /// Count per bucket index.
    private(set) var counts: [Int: UInt64] = [:]

    init() {}

    init(_ latency: LatencyHistogram) {
        for (index, count) in latency.buckets {
            counts[Self.index(of: LatencyHistogram.lowestValue(ofBucket: index)), default: 0] += count
        }
    }

    /// The buckets as `SparseBuckets.decode` gives them; nil when an index is beyond the last bucket.
    init?(buckets: [(index: Int, count: UInt64)]) {
        for (index, count) in buckets {
            guard index <= Self.index(of: LatencyHistogram.highestTrackable) else { return nil }
            counts[index, default: 0] += count
        }
    }

    static func index(of value: Int64) -> Int { LatencyHistogram.index(of: value, subBucketBits: subBucketBits) }

    /// The largest value that falls in bucket `index`.
    static func highestValue(ofBucket index: Int) -> Int64 { LatencyHistogram.highestValue(ofBucket: index, subBucketBits: subBucketBits) }

    var total: UInt64 { counts.values.reduce(0, +) }
    var isEmpty: Bool { counts.isEmpty }

    /// The non-empty buckets, lowest first.
    var buckets: [(index: Int, count: UInt64)] { counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }

    mutating func merge(_ other: SecondHistogram) {
        counts.merge(other.counts, uniquingKeysWith: +)
    }

    /// The highest value of the bucket in which `percentile` % of the values are reached; 0 when empty.
    func value(atPercentile percentile: Double) -> Int64 {
        let sorted = buckets
        let total = sorted.reduce(0) { $0 + $1.count }
        guard total > 0 else { return 0 }
        let rank = Swift.max(1, UInt64((percentile / 100 * Double(total)).rounded(.up)))
        var seen: UInt64 = 0
        for (index, count) in sorted {
            seen += count
            if seen >= rank { return Self.highestValue(ofBucket: index) }
        }
        return Self.highestValue(ofBucket: sorted[sorted.count - 1].index)
    }
}
