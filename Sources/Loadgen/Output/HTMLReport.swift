/// `--report FILE.html`: one self-contained page (inline CSS and SVG, no script, no external
/// resource) with the run's settings, throughput and latency percentiles over time, errors by kind,
/// and the per-method table.
enum HTMLReport {
    static let palette = ["#c0392b", "#d35400", "#8e44ad", "#2c3e50", "#16a085", "#7f8c8d", "#b7950b", "#1f618d"]

    static func render(_ result: FleetResult) -> String {
        let options = result.options
        let stats = result.stats
        let timeline = chartTimeline(result.timeline)
        let xMax = max(result.seconds, timeline.last?.elapsed ?? 0)
        var html = page(title: "herald-load fleet — \(escape(options.target.description))")
        html += "<h1>herald-load fleet</h1>\n"
        let mode = options.isOpenLoop ? options.modeDescription + " (latency from the scheduled start)"
            : "closed loop, flat out (latency from the start of each request)"
        html += "<p class=\"muted\">\(escape(options.target.description)) · app \(escape(options.app)) · \(TextFormat.grouped(options.devices)) devices · "
            + "\(options.connections) connections · \(options.threads) threads · \(TextFormat.fixed(result.seconds, 1)) s · \(escape(mode)) · seed \(options.seed)"
            + (options.oneSignalFraction > 0 ? " · OneSignal helper \(TextFormat.fixed(options.oneSignalFraction * 100, 0)) % of devices" : "")
            + (result.interrupted ? " · <span class=\"bad\">interrupted</span>" : "") + "</p>\n"

        let total = stats.methods.reduce(into: MethodStats()) { $0.merge($1) }
        html += "<div class=\"cards\">"
        html += card("requests", TextFormat.grouped(total.requests))
        html += card("achieved rate", TextFormat.rate(result.achievedRate) + " /s")
        html += card("failed", TextFormat.grouped(total.failed), cssClass: total.failed > 0 ? "bad" : "good")
        // A run in which nothing succeeded measured no service: no latency figure is shown.
        let showLatency = stats.ok > 0 && !total.latency.isEmpty
        html += card("p50", showLatency ? TextFormat.ms(total.latency.value(atPercentile: 50)) + " ms" : "-")
        html += card("p99", showLatency ? TextFormat.ms(total.latency.value(atPercentile: 99)) + " ms" : "-")
        html += card("max", showLatency ? TextFormat.ms(total.latency.max) + " ms" : "-")
        html += card("registered", TextFormat.grouped(stats.registered))
        if stats.dropped > 0 { html += card("never started", TextFormat.grouped(stats.dropped), cssClass: "bad") }
        html += "</div>\n"

        html += "<h2>Throughput</h2>\n"
        if timeline.isEmpty {
            html += "<p class=\"muted\">No samples (the run was shorter than a second).</p>\n"
        } else {
            var series = [
                SVGChart.Series(name: "ok / s", color: "#1e8449", points: timeline.map { ($0.middle, Double($0.ok) / max($0.span, 1e-9)) }),
                SVGChart.Series(name: "errors / s", color: "#c0392b",
                                points: timeline.map { ($0.middle, Double($0.requests - $0.ok) / max($0.span, 1e-9)) }),
            ]
            if let stages = options.stages {
                var points = [(0.0, stages.initialRate)]
                var end = 0.0
                for stage in stages.stages {
                    end += stage.seconds
                    points.append((min(end, result.seconds), stages.rate(at: min(end, result.seconds) - 1e-9)))
                    if end >= result.seconds { break }
                }
                series.append(SVGChart.Series(name: "scheduled", color: "#7f8c8d", points: points, dashed: true))
            } else if let rate = options.rate {
                series.append(SVGChart.Series(name: "scheduled", color: "#7f8c8d", points: [(0, rate), (result.seconds, rate)], dashed: true))
            }
            html += SVGChart.lines(series, xMax: xMax, yLabel: "requests / s") { TextFormat.rate($0) } + "\n"
        }

        html += "<h2>Latency over time</h2>\n"
        if timeline.count < result.timeline.count {
            html += "<p class=\"muted\">Each point covers \(result.timeline.count / timeline.count)–\((result.timeline.count + timeline.count - 1) / timeline.count) seconds; "
                + "its percentiles are those of its worst second.</p>\n"
        }
        if showLatency, timeline.contains(where: { $0.p50 > 0 || $0.max > 0 }) {
            func points(_ value: (SecondSample) -> Int64) -> [(Double, Double?)] {
                timeline.map { sample in
                    (sample.middle, sample.max > 0 || sample.p50 > 0 ? max(Double(value(sample)) / 1000, 0.001) : nil)
                }
            }
            let series = [
                SVGChart.Series(name: "p50", color: "#1f618d", points: points(\.p50)),
                SVGChart.Series(name: "p90", color: "#16a085", points: points(\.p90)),
                SVGChart.Series(name: "p99", color: "#d35400", points: points(\.p99)),
                SVGChart.Series(name: "max", color: "#c0392b", points: points(\.max), dashed: true),
            ]
            html += SVGChart.lines(series, xMax: xMax, yLabel: "milliseconds (log scale)", logarithmic: true) { value in
                value >= 1 ? TextFormat.fixed(value, 0) : TextFormat.fixed(value, value >= 0.01 ? 2 : 3)
            } + "\n"
        } else {
            html += "<p class=\"muted\">No request succeeded, so there is no latency to show.</p>\n"
        }

        html += "<h2>Errors by kind</h2>\n"
        let errors = stats.errors.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        if errors.isEmpty {
            html += "<p class=\"good\">No request failed.</p>\n"
        } else {
            html += SVGChart.bars(errors.enumerated().map { index, entry in
                (entry.key.description, entry.value, palette[index % palette.count])
            }) + "\n"
            html += "<table><tr><th>kind</th><th>count</th><th>meaning</th></tr>"
            for (kind, count) in errors {
                html += "<tr><td>\(escape(kind.description))</td><td>\(TextFormat.grouped(count))</td><td style=\"text-align:left\">\(escape(kind.explanation + (stats.details[kind].map { " (first: \($0))" } ?? "")))</td></tr>"
            }
            html += "</table>\n"
            let errorSeries = errors.prefix(6).enumerated().map { index, entry in
                SVGChart.Series(name: entry.key.description, color: palette[index % palette.count],
                                points: timeline.map { ($0.middle, Double($0.errors[entry.key] ?? 0) / max($0.span, 1e-9)) })
            }
            if !timeline.isEmpty {
                html += "<p class=\"muted\">Errors per second by kind:</p>\n"
                html += SVGChart.lines(errorSeries, xMax: xMax, yLabel: "errors / s") { TextFormat.rate($0) } + "\n"
            }
        }

        html += "<h2>By method</h2>\n<table><tr><th>method</th><th>requests</th><th>ok</th><th>errors</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th></tr>"
        func row(_ name: String, _ entry: MethodStats, total: Bool = false) -> String {
            let latency = entry.latency
            let counts = [TextFormat.grouped(entry.requests), TextFormat.grouped(entry.ok), TextFormat.grouped(entry.failed)]
            let cells = counts + (showLatency && !latency.isEmpty
                ? [TextFormat.ms(latency.value(atPercentile: 50)), TextFormat.ms(latency.value(atPercentile: 90)),
                   TextFormat.ms(latency.value(atPercentile: 99)), TextFormat.ms(latency.value(atPercentile: 99.9)), TextFormat.ms(latency.max)]
                : Array(repeating: "-", count: 5))
            return "<tr\(total ? " class=\"total\"" : "")><td>\(escape(name))</td>" + cells.map { "<td>\($0)</td>" }.joined() + "</tr>"
        }
        for method in FleetMethod.allCases where stats.methods[method.rawValue].requests > 0 {
            html += row(method.name, stats.methods[method.rawValue])
        }
        html += row("total", total, total: true) + "</table>\n"

        if showLatency {
            html += "<h2>Latency distribution (all methods)</h2>\n<table><tr><th>percentile</th>"
                + FleetResult.percentileSpectrum.map { "<th>\(TextFormat.percentileName($0))</th>" }.joined() + "</tr><tr><td>ms</td>"
                + FleetResult.percentileSpectrum.map { "<td>\(TextFormat.ms(total.latency.value(atPercentile: $0)))</td>" }.joined()
                + "</tr></table>\n"
        }

        let events = FleetStats.eventNames.enumerated().filter { stats.events[$0.offset] > 0 }
        if !events.isEmpty {
            html += "<h2>Events sent (postEvent, successful)</h2>\n<table><tr><th>event</th><th>count</th></tr>"
            for (index, name) in events { html += "<tr><td>\(escape(name))</td><td>\(TextFormat.grouped(stats.events[index]))</td></tr>" }
            html += "</table>\n"
        }
        html += "<p class=\"muted\">Latency counts every request that got an HTTP reply; requests that failed before a reply "
            + "(refused, reset, TLS, timeout) count only as errors. Percentiles come from log-linear histograms "
            + "(within 0.8 %). Generated by herald-load fleet.</p>\n</body></html>\n"
        return html
    }

    /// The page's head (inline style) and the opening of its body; `title` is already escaped.
    static func page(title: String) -> String {
        """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title)</title>
            <style>
            body { font: 14px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #222; margin: 24px auto; max-width: 920px; padding: 0 16px; }
            h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
            .muted { color: #666; } .bad { color: #c0392b; font-weight: 600; } .good { color: #1e8449; font-weight: 600; }
            table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
            th, td { padding: 4px 8px; border-bottom: 1px solid #eee; text-align: right; } th:first-child, td:first-child { text-align: left; }
            th { background: #f4f4f4; font-weight: 600; } tr.total td { font-weight: 600; border-top: 2px solid #ccc; }
            .cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
            .card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
            .card b { display: block; font-size: 20px; }
            svg { width: 100%; height: auto; } svg .tick { font-size: 11px; fill: #555; } svg .axis { font-size: 12px; fill: #333; } svg .legend { font-size: 12px; fill: #333; }
            </style></head><body>

            """
    }

    /// The most points a chart draws: longer runs are drawn in buckets of consecutive seconds.
    static let maxPoints = 1200

    /// The timeline as the charts draw it: as it is, or, past `maxPoints` samples, in buckets of
    /// consecutive seconds (counts added up; each latency percentile the worst second's, so that no
    /// stall is averaged away; each method's counts and second histograms added up).
    static func chartTimeline(_ timeline: [SecondSample]) -> [SecondSample] {
        guard timeline.count > maxPoints else { return timeline }
        let size = (timeline.count + maxPoints - 1) / maxPoints
        return stride(from: 0, to: timeline.count, by: size).map { start in
            let bucket = timeline[start..<min(start + size, timeline.count)]
            var merged = bucket.last!
            merged.span = bucket.reduce(0) { $0 + $1.span }
            merged.ok = bucket.reduce(0) { $0 + $1.ok }
            merged.errors = bucket.reduce(into: [:]) { $0.merge($1.errors, uniquingKeysWith: +) }
            merged.methods = bucket.dropLast().reduce(merged.methods) { methods, sample in
                zip(methods, sample.methods).map { var sum = $0; sum.merge($1); return sum }
            }
            merged.p50 = bucket.map(\.p50).max() ?? 0
            merged.p90 = bucket.map(\.p90).max() ?? 0
            merged.p99 = bucket.map(\.p99).max() ?? 0
            merged.max = bucket.map(\.max).max() ?? 0
            return merged
        }
    }

    static func card(_ label: String, _ value: String, cssClass: String? = nil) -> String {
        "<div class=\"card\"><span class=\"muted\">\(escape(label))</span><b\(cssClass.map { " class=\"\($0)\"" } ?? "")>\(escape(value))</b></div>"
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
