import Core
import Foundation
@testable import Loadgen
import SDKClient
import Testing

/// `--segment i/n`, `herald-load merge` and `herald-load compare`, and the results file they read.
struct SegmentMergeCompareTests {
    static let fleetFlags = ["--target", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--duration", "10", "--connections", "7"]

    @Test func segmentsCoverTheFleetExactlyAndShareItsRate() throws {
        for (devices, parts) in [(10, 1), (10, 3), (1000, 7), (5, 5), (100_003, 4)] {
            var covered: [Int] = []
            var rate = 0.0
            for index in 1...parts {
                let options = try #require(try FleetOptions.parse(Self.fleetFlags + ["--devices", "\(devices)", "--rate", "700",
                                                                                     "--segment", "\(index)/\(parts)"], cores: 2))
                let segment = try #require(options.segment)
                #expect(options.devices == segment.devices && segment.devices > 0)
                rate += try #require(options.rate)
                // The devices the part's connections serve, by their fleet-wide index.
                for number in 0..<options.connections {
                    let connection = LoadConnection(number: number, connections: options.connections, devices: options.devices,
                                                    seed: 1, firstDevice: segment.firstDevice)
                    covered += (0..<connection.deviceCount).map { connection.deviceIndex($0, connections: options.connections) }
                }
            }
            #expect(covered.sorted() == Array(0..<devices), "\(devices) devices in \(parts) parts")
            #expect(abs(rate - 700) < 1e-9, "\(rate)")
        }
    }

    @Test func segmentsShareEveryStage() throws {
        var targets = [0.0, 0.0]
        for index in 1...3 {
            let options = try #require(try FleetOptions.parse(["--target", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--devices", "100",
                                                               "--stages", "10s:300,5s:0", "--segment", "\(index)/3"], cores: 2))
            let stages = try #require(options.stages).stages
            #expect(stages.map(\.seconds) == [10, 5] && options.durationSeconds == 15)
            targets[0] += stages[0].target
            targets[1] += stages[1].target
        }
        #expect(abs(targets[0] - 300) < 1e-9 && targets[1] == 0)
    }

    @Test func aSegmentMustBeAPartThatExists() {
        let flags = Self.fleetFlags + ["--devices", "3"]
        for text in ["0/2", "3/2", "1/0", "a/2", "1", "1/2/3", "-1/2"] {
            #expect(throws: FleetOptions.Problem("--segment must be i/n with 1 ≤ i ≤ n, such as 1/4, got '\(text)'")) {
                try FleetOptions.parse(flags + ["--segment", text], cores: 2)
            }
        }
        #expect(throws: FleetOptions.Problem("--segment 1/4: 4 parts for 3 devices would leave a part without devices")) {
            try FleetOptions.parse(flags + ["--segment", "1/4"], cores: 2)
        }
    }

    /// A part's run as its `--json` file holds it: `count` requests per second of one method over
    /// `seconds` seconds, their latencies drawn from `latency`, started at `start`.
    static func part(_ index: Int, of count: Int, fleet: Int = 100, seconds: Int = 5, perSecond: Int = 200, start: Date,
                     method: FleetMethod = .postEvent, latency: (inout SplitMixForTests) -> Int64, seed: UInt64) throws -> (FleetResult, [Int64]) {
        var options = try #require(try FleetOptions.parse(["--target", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--devices", "\(fleet)",
                                                           "--duration", "\(seconds)", "--rate", "\(perSecond * count)", "--segment", "\(index)/\(count)"],
                                                          cores: 2))
        options.allowErrors = true
        var random = SplitMixForTests(seed: seed)
        var stats = FleetStats()
        var timeline: [SecondSample] = []
        var recorded: [Int64] = []
        for second in 1...seconds {
            var interval = IntervalStats()
            for request in 0..<perSecond {
                let value = latency(&random)
                recorded.append(value)
                interval.latency.record(value)
                interval.methods[method.rawValue].latency.record(value)
                if request % 50 == 0 {
                    interval.errors[.http(503), default: 0] += 1
                    interval.methods[method.rawValue].errors[.http(503), default: 0] += 1
                } else {
                    interval.ok += 1
                    interval.methods[method.rawValue].ok += 1
                }
            }
            stats.methods[method.rawValue].merge(interval.methods[method.rawValue])
            timeline.append(SecondSample(elapsed: Double(second), span: 1, interval: interval))
        }
        stats.events[0] = stats.methods[method.rawValue].ok
        stats.registered = options.devices
        var result = FleetResult(options: options, stats: stats, timeline: timeline, seconds: Double(seconds), interrupted: false)
        result.startedAt = start
        result.heraldVersion = "1.2.3 (abc)"
        return (result, recorded)
    }

    /// Writes `result` as `--json` does and reads it back.
    static func roundTrip(_ result: FleetResult, name: String = "part.json") throws -> FleetResult {
        try ResultFile.parse(try JSON.parse(result.json().encoded()), name: name)
    }

    @Test func aResultReadsBackAsItWasCounted() throws {
        let (result, _) = try Self.part(1, of: 2, start: Date(timeIntervalSince1970: 1_800_000_000), latency: { Int64($0.next() % 50_000) }, seed: 3)
        let read = try Self.roundTrip(result)
        #expect(read.stats == result.stats)
        #expect(read.options.segment == result.options.segment && read.options.devices == 50 && read.options.rate == 200)
        #expect(read.timeline.count == 5 && read.timeline.map(\.ok) == result.timeline.map(\.ok) && read.timeline.map(\.failed) == result.timeline.map(\.failed))
        #expect(read.timeline.map(\.methods) == result.timeline.map(\.methods))
        #expect(read.startedAt == result.startedAt && read.heraldVersion == "1.2.3 (abc)")
        // The JSON written again from what was read is the same JSON.
        #expect(read.json() == result.json())
    }

    @Test func theMergedHistogramIsTheHistogramOfTheUnion() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        // The parts see different latencies: averaging their percentiles would be wrong.
        let (first, fast) = try Self.part(1, of: 2, start: start, latency: { 200 + Int64($0.next() % 2_000) }, seed: 1)
        let (second, slow) = try Self.part(2, of: 2, start: start.addingTimeInterval(2), latency: { 5_000 + Int64($0.next() % 90_000) }, seed: 2)
        let merged = try ResultMerge.merge([("a.json", try Self.roundTrip(first)), ("b.json", try Self.roundTrip(second))])
        #expect(merged.missing.isEmpty)
        var union = LatencyHistogram()
        for value in fast + slow { union.record(value) }
        let method = merged.result.stats.methods[FleetMethod.postEvent.rawValue]
        #expect(method.latency == union)
        #expect(method.ok == first.stats.ok + second.stats.ok && method.failed == 20 + 20)
        #expect(merged.result.options.devices == 100 && merged.result.options.rate == 400 && merged.result.mergedSegments == ["1/2", "2/2"])
        // Aligned by the wall clock: the second part started 2 s later, so 7 seconds in all, the
        // middle three holding both parts' requests.
        #expect(merged.result.timeline.map(\.requests) == [200, 200, 400, 400, 400, 200, 200])
        #expect(merged.result.seconds == 7 && merged.result.startedAt == start)
        var thirdSecond = SecondHistogram(LatencyHistogram())
        thirdSecond.merge(first.timeline[2].methods[FleetMethod.postEvent.rawValue].latency)
        thirdSecond.merge(second.timeline[0].methods[FleetMethod.postEvent.rawValue].latency)
        #expect(merged.result.timeline[2].methods[FleetMethod.postEvent.rawValue].latency == thirdSecond)
        // Thresholds are judged on the merged run.
        let verdicts = Threshold.evaluate([try Threshold(parsing: "p50<5ms"), try Threshold(parsing: "errors<3%")], on: merged.result)
        #expect(verdicts.map(\.passed) == [union.value(atPercentile: 50) < 5_000, true])
        // The merged file is a result like any other.
        let again = try Self.roundTrip(merged.result, name: "merged.json")
        #expect(again.stats == merged.result.stats && again.mergedSegments == ["1/2", "2/2"])
    }

    @Test func mergeRefusesWhatIsNotOneFleetsSegments() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let (first, _) = try Self.part(1, of: 2, start: start, latency: { _ in 1_000 }, seed: 1)
        let (other, _) = try Self.part(1, of: 3, start: start, latency: { _ in 1_000 }, seed: 1)
        func problem(_ parts: [(String, FleetResult)]) -> String? {
            do { _ = try ResultMerge.merge(parts); return nil } catch { return error.description }
        }
        #expect(problem([("a.json", first), ("b.json", first)]) == "a.json and b.json are both segment 1/2")
        #expect(problem([("a.json", first), ("c.json", other)])?.hasPrefix("c.json is part of another fleet than a.json") == true)
        var whole = first
        whole.options.segment = nil
        #expect(problem([("w.json", whole)]) == "w.json is not a --segment run: merge combines the parts of one fleet")
        let half = try ResultMerge.merge([("a.json", first)])
        #expect(half.missing == ["2/2"] && half.result.options.devices == 50)
    }

    @Test func compareFlagsASlowerRun() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let (a, _) = try Self.part(1, of: 1, start: start, latency: { 1_000 + Int64($0.next() % 1_000) }, seed: 5)
        let (b, _) = try Self.part(1, of: 1, start: start, latency: { 3_000 + Int64($0.next() % 3_000) }, seed: 6)
        let slower = RunComparison(try Self.roundTrip(a), try Self.roundTrip(b), tolerance: 0.1)
        let postEvent = try #require(slower.rows.first { $0.name == "postEvent" })
        #expect(postEvent.regressions == [.p50, .p95, .p99])
        #expect(slower.hasRegression)
        let text = slower.render(nameA: "a.json", nameB: "b.json")
        #expect(text.contains("regressions (marked !") && text.contains("postEvent p50, postEvent p95, postEvent p99"), "\(text)")
        #expect(text.contains("×3.") && text.contains(" !"), "\(text)")
        // The other way round, B is faster: no regression. A run against itself: none either.
        #expect(!RunComparison(b, a, tolerance: 0.1).hasRegression)
        let same = RunComparison(a, a, tolerance: 0.1)
        #expect(!same.hasRegression && same.render(nameA: "a", nameB: "a").contains("regressions: none"))
        // More errors is a regression; within the tolerance is not.
        var failing = a
        var stats = failing.stats
        stats.methods[FleetMethod.postEvent.rawValue].errors[.timeout] = 100
        failing = FleetResult(options: a.options, stats: stats, timeline: a.timeline, seconds: a.seconds, interrupted: false)
        #expect(RunComparison(a, failing, tolerance: 0.1).rows.first { $0.name == "postEvent" }?.regressions == [.errors])
        #expect(!RunComparison(a, b, tolerance: 3).hasRegression)

        let html = ComparisonReport.render(slower, nameA: "a.json", nameB: "b.json")
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.hasSuffix("</html>\n") && !html.contains("<script"))
        for legend in ["A ok / s", "B ok / s", "A p99", "B p99", "postEvent"] { #expect(html.contains(">\(legend)</text>"), "\(legend)") }
        #expect(html.contains("<span class=\"bad\">×3."))
    }

    @Test func filesThatAreNotResultsAreRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-load-compare-\(UInt64.random(in: 0...UInt64.max))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (a, _) = try Self.part(1, of: 1, start: Date(), latency: { _ in 500 }, seed: 1)
        try Data(a.json().encoded()).write(to: URL(fileURLWithPath: folder + "/a.json"))
        try Data("{\"status_code\": 200}".utf8).write(to: URL(fileURLWithPath: folder + "/other.json"))
        try Data("not json".utf8).write(to: URL(fileURLWithPath: folder + "/text.json"))
        var old = a.json()
        if case .object(var members) = old { members["series"] = nil; old = .object(members) }
        try Data(old.encoded()).write(to: URL(fileURLWithPath: folder + "/old.json"))
        #expect(throws: Never.self) { try ResultFile.read(folder + "/a.json") }
        for (file, message) in [("other.json", "is not a herald-load fleet result: no herald_load_version"),
                                ("text.json", "is not a herald-load result: not JSON"),
                                ("old.json", "is not a herald-load fleet result: no per-second series"),
                                ("missing.json", "cannot read")] {
            do {
                _ = try ResultFile.read(folder + "/" + file)
                Issue.record("\(file) was read")
            } catch {
                #expect(error.description.contains(message), "\(error)")
            }
            #expect(CompareCommand.main([folder + "/a.json", folder + "/" + file]) == 2)
            #expect(MergeCommand.main([folder + "/" + file]) == 2)
        }
        #expect(CompareCommand.main([folder + "/a.json"]) == 2)
        #expect(CompareCommand.main([folder + "/a.json", folder + "/a.json", "--tolerance", "x"]) == 2)
    }

    @Test func secondHistogramsKeepPercentilesWithinASixteenth() {
        var random = SplitMixForTests(seed: 9)
        var fine = LatencyHistogram()
        for _ in 0..<5_000 { fine.record(Int64(pow2(random.unit() * 20))) }
        let coarse = SecondHistogram(fine)
        #expect(coarse.total == fine.total)
        for percentile in [1.0, 50, 90, 99, 99.9, 100] {
            let exact = Double(fine.value(atPercentile: percentile)), read = Double(coarse.value(atPercentile: percentile))
            #expect(read >= exact * (1 - 1.0 / 16) && read <= exact * (1 + 1.0 / 16) + 1, "p\(percentile): \(read) vs \(exact)")
        }
        #expect(SparseBuckets.decode(SparseBuckets.encode(coarse.buckets)).map { SecondHistogram(buckets: $0) } == coarse)
        #expect(SparseBuckets.decode([1, 0]) == nil && SparseBuckets.decode([1, 2, 0, 3]) == nil && SparseBuckets.decode([1]) == nil)
    }
}
