/// Latencies in microseconds, HdrHistogram-style: log-linear buckets, 128 per power of two, so that
/// any value it reports is within 1/128 (0.8 %) of a value recorded, from 1 µs to 19 hours, in a
/// fixed 31 KB. Values below 256 µs are kept exactly. Merging two is adding their counts.
struct LatencyHistogram: Equatable {
    /// Sub-buckets per power of two: 2^7.
    static let subBucketBits = 7
    static let subBucketCount = 1 << subBucketBits
    /// Largest value kept apart: 2^36 µs (about 19 hours); anything above counts there.
    static let highestTrackable: Int64 = (1 << 36) - 1
    static let bucketCount = index(of: highestTrackable) + 1

    private(set) var counts: [UInt64]
    private(set) var total: UInt64 = 0
    private(set) var min: Int64 = .max
    private(set) var max: Int64 = 0
    private(set) var sum: Double = 0

    init() { counts = [UInt64](repeating: 0, count: Self.bucketCount) }

    /// The bucket of a value: values below 2·128 are their own bucket; above, a power of two
    /// [2^k, 2^(k+1)) is cut into 128 equal buckets.
    @inline(__always)
    static func index(of value: Int64) -> Int { index(of: value, subBucketBits: subBucketBits) }

    /// The bucket of a value with 2^`bits` buckets per power of two (values below 2·2^`bits` their own).
    @inline(__always)
    static func index(of value: Int64, subBucketBits bits: Int) -> Int {
        let clamped = UInt64(Swift.min(Swift.max(value, 0), highestTrackable))
        if clamped < UInt64(2 << bits) { return Int(clamped) }
        let shift = (63 - clamped.leadingZeroBitCount) - bits
        return shift << bits + Int(clamped >> UInt64(shift))
    }

    /// The smallest value of bucket `index`.
    static func lowestValue(ofBucket index: Int) -> Int64 { lowestValue(ofBucket: index, subBucketBits: subBucketBits) }

    /// The largest value that falls in bucket `index`.
    static func highestValue(ofBucket index: Int) -> Int64 { highestValue(ofBucket: index, subBucketBits: subBucketBits) }

    static func lowestValue(ofBucket index: Int, subBucketBits bits: Int) -> Int64 {
        if index < 2 << bits { return Int64(index) }
        let shift = index >> bits - 1
        return Int64(index - shift << bits) << Int64(shift)
    }

    static func highestValue(ofBucket index: Int, subBucketBits bits: Int) -> Int64 {
        if index < 2 << bits { return Int64(index) }
        return lowestValue(ofBucket: index, subBucketBits: bits) + (Int64(1) << Int64(index >> bits - 1)) - 1
    }

    var isEmpty: Bool { total == 0 }

    @inline(__always)
    mutating func record(_ microseconds: Int64) {
        let value = Swift.max(microseconds, 0)
        counts[Self.index(of: value)] &+= 1
        total &+= 1
        if value < min { min = value }
        if value > max { max = value }
        sum += Double(value)
    }

    mutating func merge(_ other: LatencyHistogram) {
        guard other.total > 0 else { return }
        for index in 0..<counts.count where other.counts[index] != 0 { counts[index] &+= other.counts[index] }
        total &+= other.total
        min = Swift.min(min, other.min)
        max = Swift.max(max, other.max)
        sum += other.sum
    }

    mutating func reset() { self = LatencyHistogram() }

    /// The value below or at which `percentile` % of the recorded values fall, as the highest value
    /// of its bucket (never above the largest value recorded); 0 when empty.
    func value(atPercentile percentile: Double) -> Int64 {
        guard total > 0 else { return 0 }
        let rank = Swift.max(1, UInt64((percentile / 100 * Double(total)).rounded(.up)))
        var seen: UInt64 = 0
        for index in 0..<counts.count {
            seen &+= counts[index]
            if seen >= rank {
                // The last bucket also holds everything clamped into it: report the true largest.
                return index == counts.count - 1 ? max : Swift.min(Self.highestValue(ofBucket: index), max)
            }
        }
        return max
    }

    var mean: Double { total == 0 ? 0 : sum / Double(total) }

    /// How many values are at or below `bound` µs: every value of the buckets up to the one that
    /// holds `bound` (so values up to 0.8 % above the bound may count too).
    func count(atOrBelow bound: Int64) -> UInt64 {
        guard bound >= 0, total > 0 else { return 0 }
        var seen: UInt64 = 0
        for index in 0..<counts.count {
            guard Self.lowestValue(ofBucket: index) <= bound else { break }
            seen &+= counts[index]
        }
        return seen
    }
}

extension LatencyHistogram {
    /// The non-empty buckets, lowest first.
    var buckets: [(index: Int, count: UInt64)] {
        counts.indices.compactMap { counts[$0] == 0 ? nil : ($0, counts[$0]) }
    }

    /// A histogram with these bucket counts and extremes, as `--json` wrote them (`buckets` from
    /// `SparseBuckets.decode`); nil when a bucket index is out of range or the extremes contradict the counts.
    init?(buckets: [(index: Int, count: UInt64)], min: Int64, max: Int64, sum: Double) {
        self.init()
        for (index, count) in buckets {
            guard index >= 0, index < counts.count else { return nil }
            counts[index] &+= count
            total &+= count
        }
        guard total == 0 || (min >= 0 && min <= max && Self.index(of: min) == buckets[0].index
                             && Self.index(of: max) == buckets[buckets.count - 1].index) else { return nil }
        if total > 0 {
            self.min = min
            self.max = max
            self.sum = sum
        }
    }
}
