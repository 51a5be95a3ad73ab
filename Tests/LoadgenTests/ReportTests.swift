import Core
@testable import Loadgen
import SDKClient
import Testing

/// What a run writes: the JSON results, the summary table and the HTML page.
struct ReportTests {
    /// A run of 10 s with known counts: registerDevice 100 ok, postEvent 880 ok and 20 failures.
    func result(rate: Double? = 100) -> FleetResult {
        var stats = FleetStats()
        for value in 1...100 { stats.methods[FleetMethod.registerDevice.rawValue].latency.record(Int64(value * 100)) }
        stats.methods[FleetMethod.registerDevice.rawValue].ok = 100
        for value in 1...880 { stats.methods[FleetMethod.postEvent.rawValue].latency.record(Int64(value)) }
        stats.methods[FleetMethod.postEvent.rawValue].ok = 880
        stats.methods[FleetMethod.postEvent.rawValue].errors = [.http(503): 15, .statusCode(210): 5]
        stats.events[0] = 880
        stats.registered = 100
        stats.dropped = 3
        var timeline: [SecondSample] = []
        for second in 1...10 {
            var interval = IntervalStats()
            interval.ok = 98
            interval.errors = second == 5 ? [.http(503): 15, .statusCode(210): 5] : [:]
            for value in 1...98 { interval.latency.record(Int64(value * 10 * second)) }
            timeline.append(SecondSample(elapsed: Double(second), span: 1, interval: interval))
        }
        var options = FleetOptions(target: try! TargetURL(parsing: "http://127.0.0.1:8080"), app: "ABCDE-12345", devices: 100,
                                   durationSeconds: 10)
        options.rate = rate
        return FleetResult(options: options, stats: stats, timeline: timeline, seconds: 10, interrupted: false)
    }

    @Test func jsonHasTheDocumentedShape() throws {
        let json = try JSON.parse(result().json().encoded())
        #expect(json["devices"] == 100)
        #expect(json["duration_s"]?.lenientDouble == 10)
        #expect(json["rate"]?.lenientDouble == 100)  // 1,000 requests in 10 s
        let requests = try #require(json["requests"]?.objectValue)
        #expect(Set(requests.keys) == ["registerDevice", "postEvent"])  // methods never called are left out
        let events = try #require(requests["postEvent"])
        #expect(events["ok"] == 880)
        #expect(events["errors"] == ["http_503": 15, "status_code_210": 5])
        // Rank 440 of 1…880 µs: its bucket 440…441 (2 µs wide above 256 µs).
        #expect(events["p50_ms"]?.lenientDouble == 0.441 && events["max_ms"]?.lenientDouble == 0.88)
        let register = try #require(requests["registerDevice"])
        #expect(register["p99_ms"]?.lenientDouble == 9.919)  // 9,900 µs falls in the bucket 9,856…9,919
        #expect(register["max_ms"]?.lenientDouble == 10)
        #expect(json["errors"] == ["http_503": 15, "status_code_210": 5])
        #expect(json["events"] == ["PW_ScreenOpen": 880])
        #expect(json["registered"] == 100 && json["dropped"] == 3 && json["mode"] == "open" && json["target_rate"]?.lenientDouble == 100)
        #expect(json["total"]?["requests"] == 1000)
        #expect(try JSON.parse(result(rate: nil).json().encoded())["mode"] == "closed")
    }

    @Test func theSummaryShowsEveryMethodAndErrorKind() {
        let text = SummaryTable.render(result())
        #expect(text.contains("open loop at 100 req/s"))
        let lines = text.split(separator: "\n").map(String.init)
        let header = lines.first { $0.hasPrefix("method") }!
        for column in ["requests", "ok", "errors", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"] { #expect(header.contains(column)) }
        #expect(lines.contains { $0.hasPrefix("postEvent") && $0.contains("900") && $0.contains("880") && $0.contains("20") })
        #expect(lines.contains { $0.hasPrefix("total") && $0.contains("1,000") })
        #expect(text.contains("http_503") && text.contains("HTTP 503 (server error)"))
        #expect(text.contains("status_code_210") && text.contains("argument error"))
        #expect(text.contains("3 scheduled requests never started"))
        #expect(text.contains("errors: 20 of 1,000 requests failed"))
    }

    @Test func theReportIsOneSelfContainedPage() {
        let html = HTMLReport.render(result())
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.hasSuffix("</html>\n"))
        // Charts: throughput, latency, errors by kind (bars) and errors over time.
        #expect(html.components(separatedBy: "<svg").count - 1 == 4)
        #expect(html.contains("Throughput") && html.contains("Latency over time") && html.contains("Errors by kind"))
        #expect(html.contains("http_503") && html.contains("status_code_210") && html.contains("PW_ScreenOpen"))
        // Nothing to fetch: no script, no external stylesheet, image or font.
        for forbidden in ["<script", "<link", "<img", "src=", "@import", "url("] { #expect(!html.contains(forbidden), "\(forbidden)") }
        // What the page shows is escaped.
        var hostile = result()
        hostile = FleetResult(options: { var o = hostile.options; o.app = "<b>&"; return o }(), stats: hostile.stats,
                              timeline: hostile.timeline, seconds: 10, interrupted: true)
        let escaped = HTMLReport.render(hostile)
        #expect(escaped.contains("&lt;b&gt;&amp;") && !escaped.contains("<b>&") && escaped.contains("interrupted"))
    }

    @Test func aRunWithoutRepliesStillWritesAPage() {
        var options = result().options
        options.rate = nil
        var stats = FleetStats()
        stats.methods[0].errors = [.connectionRefused: 7]
        let html = HTMLReport.render(FleetResult(options: options, stats: stats, timeline: [], seconds: 1, interrupted: false))
        #expect(html.contains("connection_refused") && html.contains("No request succeeded"))
    }

    /// Replies that all failed (HTTP 503) were timed, but a run in which nothing succeeded shows
    /// no latency figure anywhere: cards, per-method table and distribution.
    @Test func aRunWhereEverythingFailedShowsNoLatency() {
        var stats = FleetStats()
        stats.methods[0].errors = [.http(503): 20]
        for value in 1...20 { stats.methods[0].latency.record(Int64(value * 1_000)) }
        let run = FleetResult(options: result().options, stats: stats, timeline: [], seconds: 1, interrupted: false)
        let html = HTMLReport.render(run)
        #expect(html.contains("No request succeeded") && !html.contains("Latency distribution") && !html.contains("20.00"), "\(html)")
        let text = SummaryTable.render(run)
        #expect(text.contains("latency: none shown, since no request succeeded") && !text.contains("20.00"), "\(text)")
        #expect(run.json()["total"]?["p99_ms"] == .null && run.json()["requests"]?["registerDevice"]?["max_ms"] == .null)
    }

    @Test func numbersAreFormattedForPeople() {
        #expect(TextFormat.grouped(1_234_567) == "1,234,567" && TextFormat.grouped(999) == "999" && TextFormat.grouped(-1000) == "-1,000")
        #expect(TextFormat.fixed(2.005, 2) == "2.01" || TextFormat.fixed(2.005, 2) == "2.00")
        #expect(TextFormat.fixed(0.5, 0) == "1" && TextFormat.fixed(12.25, 1) == "12.3" || TextFormat.fixed(12.25, 1) == "12.2")
        #expect(TextFormat.ms(1_234) == "1.23" && TextFormat.ms(123_456) == "123.5" && TextFormat.ms(12_345_678) == "12346")
        #expect(ProgressLine.render(elapsed: 3.2, duration: 30, last: nil, ok: 1200, errors: 0).contains("ok 1,200"))
    }
}

/// A long run is drawn in buckets, without hiding a bad second.
struct ReportTimelineTests {
    @Test func longTimelinesAreBucketedKeepingTheWorstSecond() {
        var timeline: [SecondSample] = []
        for second in 1...5000 {
            var interval = IntervalStats()
            interval.ok = 10
            interval.latency.record(second == 4321 ? 2_000_000 : 1_000)
            timeline.append(SecondSample(elapsed: Double(second), span: 1, interval: interval))
        }
        let drawn = HTMLReport.chartTimeline(timeline)
        #expect(drawn.count <= HTMLReport.maxPoints && drawn.count >= HTMLReport.maxPoints / 2)
        #expect(drawn.reduce(0) { $0 + $1.ok } == 50_000)
        #expect(abs(drawn.reduce(0) { $0 + $1.span } - 5000) < 1e-6)
        #expect(drawn.map(\.max).max() == 2_000_000 && drawn.filter { $0.p99 >= 1_000_000 }.count == 1)
        #expect(HTMLReport.chartTimeline(Array(timeline.prefix(100))) == Array(timeline.prefix(100)))
    }
}

struct ReportDistributionTests {
    @Test func theFullPercentileSpectrumIsWritten() throws {
        var stats = FleetStats()
        for value in 1...10_000 { stats.methods[0].latency.record(Int64(value)) }
        stats.methods[0].ok = 10_000
        stats.bytesSent = 4_000_000
        stats.bytesReceived = 1_500_000
        let options = FleetOptions(target: TargetURL(isTLS: false, host: "h", port: 1), app: "A", devices: 1, durationSeconds: 2)
        let result = FleetResult(options: options, stats: stats, timeline: [], seconds: 2, interrupted: false)
        let json = try JSON.parse(result.json().encoded())
        let spectrum = try #require(json["total"]?["percentiles_ms"]?.objectValue)
        #expect(Set(spectrum.keys) == ["50", "75", "90", "95", "99", "99.9", "99.99", "100"])
        #expect(spectrum["100"]?.lenientDouble == 10 && spectrum["50"]?.lenientDouble == 5.023)
        #expect(json["bytes_sent"] == 4_000_000 && json["bytes_received"] == 1_500_000)
        #expect(SummaryTable.render(result).contains("transfer: 4.0 MB sent, 1.5 MB received (2.8 MB/s)"))
        #expect(HTMLReport.render(result).contains("Latency distribution"))
    }

    /// --metrics-listen's text: counters by method and result, and histograms whose buckets are
    /// cumulative and end with every timed request.
    @Test func liveMetricsCountWhatTheRunCounted() {
        let run = ReportTests().result()
        let text = LoadMetrics.render(run.stats, options: run.options, elapsed: 5)
        #expect(text.contains("herald_load_requests_total{method=\"postEvent\",result=\"ok\"} 880\n"))
        #expect(text.contains("herald_load_requests_total{method=\"postEvent\",result=\"http_503\"} 15\n"))
        // registerDevice: 100 latencies of 0.1…10 ms: 5 at or below 0.5 ms, 10 at or below 1 ms, all below 10 ms.
        #expect(text.contains("herald_load_request_duration_seconds_bucket{method=\"registerDevice\",le=\"0.0005\"} 5\n"), "\(text)")
        #expect(text.contains("herald_load_request_duration_seconds_bucket{method=\"registerDevice\",le=\"0.001\"} 10\n"), "\(text)")
        #expect(text.contains("herald_load_request_duration_seconds_bucket{method=\"registerDevice\",le=\"10.0\"} 100\n"), "\(text)")
        #expect(text.contains("herald_load_request_duration_seconds_count{method=\"registerDevice\"} 100\n"))
        #expect(text.contains("herald_load_scheduled_rate 100.0\n") && text.contains("herald_load_devices_registered_total 100\n"), "\(text)")
    }
}
