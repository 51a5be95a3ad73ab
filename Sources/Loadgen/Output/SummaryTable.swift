/// The table printed at the end of a run: the settings, one row per method and a total, the
/// errors by kind with what they mean, and the events and registrations counted.
enum SummaryTable {
    static func render(_ result: FleetResult) -> String {
        let options = result.options
        let stats = result.stats
        var lines: [String] = []
        let mode = options.isOpenLoop ? options.modeDescription : "closed loop (flat out)"
        lines.append("herald-load fleet: \(options.target), app \(options.app), \(TextFormat.grouped(options.devices)) devices, "
            + "\(options.connections) connections, \(options.threads) threads, \(TextFormat.fixed(result.seconds, 1)) s, "
            + "\(mode), seed \(options.seed)"
            + (options.oneSignalFraction > 0 ? ", OneSignal helper \(TextFormat.fixed(options.oneSignalFraction * 100, 0)) %" : "")
            + (options.segment.map { ", segment \($0): devices \($0.firstDevice)…\($0.firstDevice + $0.devices - 1) of \(TextFormat.grouped($0.fleetDevices))" } ?? "")
            + (options.webFraction > 0 ? ", browsers \(TextFormat.fixed(options.webFraction * 100, 0)) %" : "")
            + (options.scenarioPath.map { ", scenario \($0)" } ?? "")
            + (result.interrupted ? " (interrupted)" : ""))
        lines.append("")
        let header = ["method", "requests", "ok", "errors", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"]
        var rows: [[String]] = []
        // A run in which nothing succeeded measured no service: its latencies would only mislead.
        let showLatency = stats.ok > 0
        func row(_ name: String, _ entry: MethodStats) -> [String] {
            let latency = entry.latency
            let counts = [name, TextFormat.grouped(entry.requests), TextFormat.grouped(entry.ok), TextFormat.grouped(entry.failed)]
            guard showLatency, !latency.isEmpty else { return counts + Array(repeating: "-", count: 5) }
            return counts + [TextFormat.ms(latency.value(atPercentile: 50)), TextFormat.ms(latency.value(atPercentile: 90)),
                             TextFormat.ms(latency.value(atPercentile: 99)), TextFormat.ms(latency.value(atPercentile: 99.9)),
                             TextFormat.ms(latency.max)]
        }
        for method in FleetMethod.allCases where stats.methods[method.rawValue].requests > 0 {
            rows.append(row(method.name, stats.methods[method.rawValue]))
        }
        rows.append(row("total", stats.methods.reduce(into: MethodStats()) { $0.merge($1) }))
        var table = TextFormat.columns([header] + rows)
        table.insert(String(repeating: "-", count: table[0].count), at: table.count - 1)
        lines += table
        lines.append("")
        var rateLine = "rate: \(TextFormat.rate(result.achievedRate)) req/s achieved"
        if let target = options.rate { rateLine += " of \(TextFormat.rate(target)) scheduled" }
        if stats.dropped > 0 {
            rateLine += "; \(TextFormat.grouped(stats.dropped)) scheduled requests never started (the target did not keep up)"
        }
        lines.append(rateLine)
        if result.seconds > 0 && stats.bytesSent + stats.bytesReceived > 0 {
            lines.append("transfer: \(TextFormat.bytes(stats.bytesSent)) sent, \(TextFormat.bytes(stats.bytesReceived)) received "
                + "(\(TextFormat.bytes(Int(Double(stats.bytesSent + stats.bytesReceived) / result.seconds)))/s)")
        }
        var devices = "devices: \(TextFormat.grouped(stats.registered)) registered in this run of \(TextFormat.grouped(options.devices))"
        devices += "; \(TextFormat.grouped(stats.optedOut)) of them opted out (iOS, no notification permission)"
        if options.oneSignalFraction > 0 { devices += ", \(TextFormat.grouped(stats.unsubscribed)) unsubscribed (OneSignal helper)" }
        devices += "; a campaign to every device reaches \(TextFormat.grouped(stats.expectedAudience)) of them"
        lines.append(devices)
        let events = FleetStats.eventNames.enumerated().filter { stats.events[$0.offset] > 0 }
            .map { "\($0.element) \(TextFormat.grouped(stats.events[$0.offset]))" }
        if !events.isEmpty { lines.append("events: " + events.joined(separator: ", ")) }
        let errors = stats.errors.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        if errors.isEmpty {
            lines.append("errors: none")
        } else {
            lines.append("errors: \(TextFormat.grouped(stats.failed)) of \(TextFormat.grouped(stats.requests)) requests failed")
            for (kind, count) in errors {
                let detail = stats.details[kind].map { " (first: \($0))" } ?? ""
                lines.append("  \(TextFormat.padLeft(TextFormat.grouped(count), 10))  \(TextFormat.padRight(kind.description, 22))  \(kind.explanation)\(detail)")
            }
        }
        if showLatency {
            lines.append("latency: from the " + (options.isOpenLoop ? "scheduled start of each request" : "start of each request")
                + " to its complete reply, for every request that got an HTTP reply")
        } else {
            lines.append("latency: none shown, since no request succeeded")
        }
        return lines.joined(separator: "\n")
    }
}
