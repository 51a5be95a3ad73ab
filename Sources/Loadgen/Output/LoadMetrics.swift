import BuildInfo

/// What `--metrics-listen` serves while a fleet runs, in the Prometheus text format, so that a
/// dashboard can lay the load beside Herald's own `/metrics`: requests per method by result, their
/// latency as histograms with the same bounds as Herald's `herald_http_request_duration_seconds`,
/// the scheduled rate, the registrations, and the build.
enum LoadMetrics {
    /// Upper bounds in seconds, as Herald's request-duration histogram has them.
    static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// The text for `stats` counted so far, `elapsed` seconds into the run.
    static func render(_ stats: FleetStats, options: FleetOptions, elapsed: Double) -> String {
        var lines: [String] = []
        func family(_ name: String, _ type: String, _ help: String) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
        }
        family("herald_load_build_info", "gauge", "1, labelled with the version and git commit of this herald-load.")
        lines.append("herald_load_build_info{version=\"\(BuildInfo.version)\",commit=\"\(BuildInfo.commit)\"} 1")
        family("herald_load_requests_total", "counter", "Requests finished, by method and result (ok, or the error kind).")
        for method in FleetMethod.allCases {
            let entry = stats.methods[method.rawValue]
            guard entry.requests > 0 else { continue }
            lines.append("herald_load_requests_total{method=\"\(method.name)\",result=\"ok\"} \(entry.ok)")
            for (kind, count) in entry.errors.sorted(by: { $0.key < $1.key }) {
                lines.append("herald_load_requests_total{method=\"\(method.name)\",result=\"\(kind)\"} \(count)")
            }
        }
        family("herald_load_request_duration_seconds", "histogram",
               "Latency of requests that got an HTTP reply, by method: from the (scheduled, in an open loop) start to the complete reply.")
        for method in FleetMethod.allCases {
            let latency = stats.methods[method.rawValue].latency
            guard !latency.isEmpty else { continue }
            let labels = "method=\"\(method.name)\""
            for bound in bounds {
                lines.append("herald_load_request_duration_seconds_bucket{\(labels),le=\"\(bound)\"} \(latency.count(atOrBelow: Int64(bound * 1e6)))")
            }
            lines.append("herald_load_request_duration_seconds_bucket{\(labels),le=\"+Inf\"} \(latency.total)")
            lines.append("herald_load_request_duration_seconds_sum{\(labels)} \(latency.sum / 1e6)")
            lines.append("herald_load_request_duration_seconds_count{\(labels)} \(latency.total)")
        }
        family("herald_load_scheduled_rate", "gauge", "Requests per second the open loop schedules now (absent in a closed loop).")
        if let stages = options.stages {
            lines.append("herald_load_scheduled_rate \(stages.rate(at: elapsed))")
        } else if let rate = options.rate {
            lines.append("herald_load_scheduled_rate \(elapsed < options.durationSeconds ? rate : 0)")
        }
        family("herald_load_devices_registered_total", "counter", "Simulated devices whose registration succeeded in this run.")
        lines.append("herald_load_devices_registered_total \(stats.registered)")
        family("herald_load_dropped_total", "counter", "Open loop: scheduled requests that never started (counted at the end of the run).")
        lines.append("herald_load_dropped_total \(stats.dropped)")
        return lines.joined(separator: "\n") + "\n"
    }
}
