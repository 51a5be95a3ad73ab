import Testing
@testable import Core

@Suite struct DeviceSketchTests {
    static func sketch(_ devices: some Sequence<Int>, prefix: String = "device-") -> DeviceSketch {
        var sketch = DeviceSketch()
        for device in devices { sketch.insert(prefix + String(device)) }
        return sketch
    }

    @Test func countsExactlyUpToTheLimitAndRoundTrips() throws {
        var sketch = Self.sketch(0..<DeviceSketch.exactLimit)
        for device in 0..<100 { sketch.insert("device-\(device)") }
        #expect(sketch.count == DeviceSketch.exactLimit)
        let decoded = try #require(DeviceSketch(encoded: sketch.encoded))
        #expect(decoded == sketch && decoded.count == DeviceSketch.exactLimit)
        var union = Self.sketch(0..<300)
        union.formUnion(Self.sketch(200..<500))
        #expect(union.count == 500)
        #expect(DeviceSketch(encoded: []) == nil && DeviceSketch(encoded: [1, 2, 3]) == nil && DeviceSketch(encoded: [0, 1]) == nil)
    }

    @Test func estimatesLargeCountsWithinThreePercent() throws {
        for total in [600, 5_000, 100_000, 400_000] {
            let sketch = Self.sketch(0..<total)
            let error = abs(Double(sketch.count - total)) / Double(total)
            #expect(error < 0.03, "\(total) devices estimated as \(sketch.count)")
            #expect(try #require(DeviceSketch(encoded: sketch.encoded)) == sketch)
        }
    }

    @Test func mergingEqualsCountingTheUnion() {
        // Two days of 60,000 devices each, 20,000 of them on both days.
        var merged = Self.sketch(0..<60_000)
        merged.formUnion(Self.sketch(40_000..<100_000))
        #expect(merged == Self.sketch(0..<100_000))
        // An exact sketch merged into a large one, and the other way round.
        var small = Self.sketch(0..<100)
        small.formUnion(Self.sketch(50..<100_000))
        #expect(small == Self.sketch(0..<100_000))
        var large = Self.sketch(50..<100_000)
        large.formUnion(Self.sketch(0..<100))
        #expect(large == small)
    }
}
