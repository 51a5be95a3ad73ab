import BuildInfo
import Core
import Foundation

/// The outcome of a fleet run: what was asked, what was counted, and the run's timeline.
struct FleetResult {
    var options: FleetOptions
    let stats: FleetStats
    /// One sample per second (the last may be shorter).
    let timeline: [SecondSample]
    /// The sending window in seconds: `--duration`, or less when interrupted.
    let seconds: Double
    /// Ctrl-C ended the run early.
    let interrupted: Bool
    /// When the run started (wall clock), and the version Herald's `/healthz` gave; nil when unknown.
    var startedAt: Date?
    var heraldVersion: String?
    /// The herald-load that measured the run (this one, unless the result was read from a file).
    var heraldLoadVersion = BuildInfo.description
    /// `herald-load merge`: the segments (`1/4`…) the result adds up; empty for a single run.
    var mergedSegments: [String] = []

    /// Replies (and failures) per second over the sending window.
    var achievedRate: Double { seconds > 0 ? Double(stats.requests) / seconds : 0 }

    /// Whether the run should exit 1.
    var failed: Bool { stats.failed > 0 && !options.allowErrors }

    static func milliseconds(_ microseconds: Int64) -> Double { Double(microseconds) / 1000 }

    /// The results as JSON: the documented keys (`devices`, `duration_s`, `requests` per method with
    /// `ok`, `errors`, `p50_ms`, `p99_ms`, `max_ms`, and `rate`) and more detail beside them, with
    /// the thresholds' verdicts when there are any.
    func json(thresholds: [Threshold.Verdict] = []) -> JSON {
        var requests: [String: JSON] = [:]
        for method in FleetMethod.allCases {
            let entry = stats.methods[method.rawValue]
            guard entry.requests > 0 else { continue }
            requests[method.name] = Self.methodJSON(entry, latency: stats.ok > 0)
        }
        var events: [String: JSON] = [:]
        for (index, name) in FleetStats.eventNames.enumerated() where stats.events[index] > 0 {
            events[name] = .int(Int64(stats.events[index]))
        }
        var errors: [String: JSON] = [:]
        for (kind, count) in stats.errors { errors[kind.description] = .int(Int64(count)) }
        var details: [String: JSON] = [:]
        for (kind, text) in stats.details { details[kind.description] = .string(text) }
        var object: [String: JSON] = [
            "devices": .int(Int64(options.devices)),
            "duration_s": .double(Self.round(seconds, 3)),
            "requests": .object(requests),
            "rate": .double(Self.round(achievedRate, 1)),
            "target": .string(options.target.description),
            "app": .string(options.app),
            "mode": .string(options.isOpenLoop ? "open" : "closed"),
            "connections": .int(Int64(options.connections)),
            "threads": .int(Int64(options.threads)),
            "seed": .int(Int64(bitPattern: options.seed)),
            "onesignal_fraction": .double(options.oneSignalFraction),
            "huawei_fraction": .double(options.huaweiFraction),
            "web_fraction": .double(options.webFraction), "scenario": options.scenarioPath.map(JSON.string) ?? .null,
            "total": Self.methodJSON(stats.methods.reduce(into: MethodStats()) { $0.merge($1) }, latency: stats.ok > 0),
            "errors": .object(errors),
            "error_details": .object(details),
            "events": .object(events),
            "registered": .int(Int64(stats.registered)),
            "opted_out": .int(Int64(stats.optedOut)),
            "unsubscribed": .int(Int64(stats.unsubscribed)),
            "expected_audience": .int(Int64(stats.expectedAudience)),
            "bytes_sent": .int(Int64(stats.bytesSent)),
            "bytes_received": .int(Int64(stats.bytesReceived)),
            "dropped": .int(Int64(stats.dropped)),
            "interrupted": .bool(interrupted),
            "herald_load_version": .string(heraldLoadVersion),
            "series": seriesJSON(),
            "herald_version": heraldVersion.map(JSON.string) ?? .null,
            "started_at": startedAt.map { .string(ISO8601DateFormatter().string(from: $0)) } ?? .null,
        ]
        if let rate = options.rate { object["target_rate"] = .double(rate) }
        if let stages = options.stages {
            object["stages"] = .array(stages.stages.map { ["duration_s": .double($0.seconds), "target_rate": .double($0.target)] })
            object["scheduled"] = .int(Int64(stages.totalRequests.rounded(.up)))
        }
        if let segment = options.segment {
            object["segment"] = ["index": .int(Int64(segment.index)), "count": .int(Int64(segment.count)),
                                 "fleet_devices": .int(Int64(segment.fleetDevices)), "first_device": .int(Int64(segment.firstDevice))]
        }
        if !mergedSegments.isEmpty {
            object["merged_segments"] = .array(mergedSegments.map(JSON.string))
        }
        if !thresholds.isEmpty {
            object["thresholds"] = .array(thresholds.map { verdict in
                ["threshold": .string(verdict.threshold.description), "value": verdict.value.map(JSON.double) ?? .null,
                 "passed": .bool(verdict.passed)]
            })
        }
        return .object(object)
    }

    /// One method's counts and, when `latency` (some request of the run succeeded) and it has
    /// timed replies, its latency figures; else they are null.
    static func methodJSON(_ entry: MethodStats, latency shown: Bool) -> JSON {
        var errors: [String: JSON] = [:]
        for (kind, count) in entry.errors { errors[kind.description] = .int(Int64(count)) }
        let latency = entry.latency
        guard shown, !latency.isEmpty else {
            var object: [String: JSON] = ["requests": .int(Int64(entry.requests)), "ok": .int(Int64(entry.ok)), "errors": .object(errors),
                                          "percentiles_ms": .null, "histogram": histogramJSON(latency)]
            for key in ["p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "max_ms", "mean_ms"] { object[key] = .null }
            return .object(object)
        }
        var percentiles: [String: JSON] = [:]
        for percentile in percentileSpectrum {
            percentiles[TextFormat.percentileName(percentile)] = .double(milliseconds(latency.value(atPercentile: percentile)))
        }
        return [
            "percentiles_ms": .object(percentiles),
            "requests": .int(Int64(entry.requests)),
            "ok": .int(Int64(entry.ok)),
            "errors": .object(errors),
            "p50_ms": .double(milliseconds(latency.value(atPercentile: 50))),
            "p90_ms": .double(milliseconds(latency.value(atPercentile: 90))),
            "p99_ms": .double(milliseconds(latency.value(atPercentile: 99))),
            "p99_9_ms": .double(milliseconds(latency.value(atPercentile: 99.9))),
            "max_ms": .double(milliseconds(latency.isEmpty ? 0 : latency.max)),
            "mean_ms": .double(round(latency.mean / 1000, 3)),
            "histogram": histogramJSON(latency),
        ]
    }

    /// Every latency of a method, exactly as counted, so that runs merge bucket by bucket:
    /// `LatencyHistogram`'s buckets as `SparseBuckets`, and the extremes and sum in µs.
    static func histogramJSON(_ latency: LatencyHistogram) -> JSON {
        [
            "buckets": SparseBuckets.encode(latency.buckets),
            "min_us": .int(latency.isEmpty ? 0 : latency.min),
            "max_us": .int(latency.max),
            "sum_us": .double(latency.sum),
        ]
    }

    /// The timeline per method: `end_s` the end of each interval (seconds after the start); per
    /// method called, `ok`, `errors` and `latency` (a `SecondHistogram` as `SparseBuckets`) for each;
    /// and the errors of all methods by kind, for each.
    func seriesJSON() -> JSON {
        var methods: [String: JSON] = [:]
        for method in FleetMethod.allCases where stats.methods[method.rawValue].requests > 0 {
            let seconds = timeline.map { $0.methods[method.rawValue] }
            methods[method.name] = [
                "ok": .array(seconds.map { .int(Int64($0.ok)) }),
                "errors": .array(seconds.map { .int(Int64($0.failed)) }),
                "latency": .array(seconds.map { SparseBuckets.encode($0.latency.buckets) }),
            ]
        }
        var errors: [String: JSON] = [:]
        for kind in Set(timeline.flatMap(\.errors.keys)) {
            errors[kind.description] = .array(timeline.map { .int(Int64($0.errors[kind] ?? 0)) })
        }
        return ["end_s": .array(timeline.map { .double(Self.round($0.elapsed, 3)) }), "methods": .object(methods), "errors": .object(errors)]
    }

    /// The percentiles listed in full (`percentiles_ms`, the report's distribution table).
    static let percentileSpectrum: [Double] = [50, 75, 90, 95, 99, 99.9, 99.99, 100]

    static func round(_ value: Double, _ places: Int) -> Double {
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        return (value * scale).rounded() / scale
    }
}
