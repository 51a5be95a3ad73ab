@testable import Loadgen
import Testing

/// The histogram behind every percentile herald-load reports.
struct LatencyHistogramTests {
    @Test func smallValuesAreExact() {
        var histogram = LatencyHistogram()
        for value in 0..<256 { histogram.record(Int64(value)) }
        #expect(histogram.total == 256)
        #expect(histogram.value(atPercentile: 50) == 127)
        #expect(histogram.value(atPercentile: 100) == 255)
        #expect(histogram.min == 0 && histogram.max == 255)
    }

    @Test func bucketsTileTheRangeWithBoundedRelativeError() {
        // Every bucket starts right after the previous one ends, and is at most 1/128 of its start wide.
        var expectedLow: Int64 = 0
        for index in 0..<LatencyHistogram.bucketCount {
            let low = LatencyHistogram.lowestValue(ofBucket: index)
            let high = LatencyHistogram.highestValue(ofBucket: index)
            #expect(low == expectedLow)
            #expect(high >= low)
            if low >= 256 { #expect(Double(high - low + 1) / Double(low) <= 1.0 / 128 + 1e-12) }
            #expect(LatencyHistogram.index(of: low) == index && LatencyHistogram.index(of: high) == index)
            expectedLow = high + 1
        }
        #expect(expectedLow == LatencyHistogram.highestTrackable + 1)
    }

    @Test func percentilesStayWithinTheRelativeErrorOfTheExactOnes() {
        var histogram = LatencyHistogram()
        var random = SplitMixForTests(seed: 42)
        var values: [Int64] = []
        for _ in 0..<100_000 {
            // Log-uniform from 50 µs to 5 s, as latencies spread.
            let value = Int64(50 * pow2(random.unit() * 16.6))
            values.append(value)
            histogram.record(value)
        }
        values.sort()
        for percentile in [50.0, 90, 99, 99.9, 99.99] {
            let exact = values[Int((percentile / 100 * Double(values.count)).rounded(.up)) - 1]
            let reported = histogram.value(atPercentile: percentile)
            #expect(reported >= exact, "p\(percentile): \(reported) below \(exact)")
            #expect(Double(reported - exact) <= Double(exact) / 128 + 1, "p\(percentile): \(reported) vs \(exact)")
        }
        #expect(histogram.value(atPercentile: 100) == values.last!)
        #expect(histogram.max == values.last! && histogram.min == values.first!)
    }

    @Test func mergingIsAddingAndResetEmpties() {
        var a = LatencyHistogram(), b = LatencyHistogram(), both = LatencyHistogram()
        for value in stride(from: Int64(1), to: 50_000, by: 7) {
            if value % 2 == 0 { a.record(value) } else { b.record(value) }
            both.record(value)
        }
        a.merge(b)
        #expect(a == both)
        a.reset()
        #expect(a.isEmpty && a.value(atPercentile: 99) == 0)
    }

    @Test func outOfRangeValuesAreClampedNotLost() {
        var histogram = LatencyHistogram()
        histogram.record(-5)
        histogram.record(LatencyHistogram.highestTrackable * 4)
        #expect(histogram.total == 2)
        #expect(histogram.value(atPercentile: 50) == 0)
        #expect(histogram.value(atPercentile: 100) == LatencyHistogram.highestTrackable * 4)
    }
}
