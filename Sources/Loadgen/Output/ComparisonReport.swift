/// `compare --html FILE`: both runs on one self-contained page (the same style as `--report`): the
/// comparison table with its regressions, and the per-second series of A (solid) and B (dashed)
/// laid over each other: throughput, latency, and each method's rate and p99.
enum ComparisonReport {
    static func render(_ comparison: RunComparison, nameA: String, nameB: String) -> String {
        let escape = HTMLReport.escape
        let timelineA = HTMLReport.chartTimeline(comparison.a.timeline)
        let timelineB = HTMLReport.chartTimeline(comparison.b.timeline)
        let xMax = max(comparison.a.seconds, comparison.b.seconds, timelineA.last?.elapsed ?? 0, timelineB.last?.elapsed ?? 0)
        var html = HTMLReport.page(title: "herald-load compare — \(escape(nameA)) vs \(escape(nameB))")
        html += "<h1>herald-load compare</h1>\n"
        html += "<p><b>A</b> (solid) \(escape(nameA)): <span class=\"muted\">\(escape(RunComparison.describe(comparison.a)))</span><br>"
            + "<b>B</b> (dashed) \(escape(nameB)): <span class=\"muted\">\(escape(RunComparison.describe(comparison.b)))</span></p>\n"

        html += "<h2>By method</h2>\n<p class=\"muted\">Each cell: A → B, and B's ratio to A (errors: the difference in percentage points).</p>\n"
        html += "<table><tr><th>method</th><th>rate /s</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>errors</th></tr>"
        for row in comparison.rows {
            html += "<tr\(row.name == "total" ? " class=\"total\"" : "")><td>\(escape(row.name))</td>"
            for figure in RunComparison.Figure.allCases {
                let cells = comparison.cells(row, figure)
                html += "<td>\(escape(cells[0])) → \(escape(cells[1])) <span class=\"\(row.regressions.contains(figure) ? "bad" : "muted")\">"
                    + "\(escape(cells[2]))</span></td>"
            }
            html += "</tr>"
        }
        html += "</table>\n<p class=\"\(comparison.hasRegression ? "bad" : "good")\">"
            + (comparison.hasRegression
                ? "Marked: B worse than A by more than \(TextFormat.fixed(comparison.tolerance * 100, 0)) % (errors: by 0.1 percentage point)."
                : "No regression: B is within \(TextFormat.fixed(comparison.tolerance * 100, 0)) % of A.") + "</p>\n"

        func line(_ name: String, _ color: String, _ timeline: [SecondSample], dashed: Bool, _ value: (SecondSample) -> Double?) -> SVGChart.Series {
            SVGChart.Series(name: name, color: color, points: timeline.map { ($0.middle, value($0)) }, dashed: dashed)
        }
        func milliseconds(_ value: Double) -> String { value >= 1 ? TextFormat.fixed(value, 0) : TextFormat.fixed(value, value >= 0.01 ? 2 : 3) }
        html += "<h2>Throughput</h2>\n"
        html += SVGChart.lines([
            line("A ok / s", "#1e8449", timelineA, dashed: false) { Double($0.ok) / max($0.span, 1e-9) },
            line("B ok / s", "#1e8449", timelineB, dashed: true) { Double($0.ok) / max($0.span, 1e-9) },
            line("A errors / s", "#c0392b", timelineA, dashed: false) { Double($0.failed) / max($0.span, 1e-9) },
            line("B errors / s", "#c0392b", timelineB, dashed: true) { Double($0.failed) / max($0.span, 1e-9) },
        ], xMax: xMax, yLabel: "requests / s") { TextFormat.rate($0) } + "\n"

        html += "<h2>Latency over time (all methods)</h2>\n"
        func latency(_ sample: SecondSample, _ value: Int64) -> Double? { sample.ok + sample.failed > 0 && sample.max > 0 ? max(Double(value) / 1000, 0.001) : nil }
        html += SVGChart.lines([
            line("A p50", "#1f618d", timelineA, dashed: false) { latency($0, $0.p50) },
            line("B p50", "#1f618d", timelineB, dashed: true) { latency($0, $0.p50) },
            line("A p99", "#d35400", timelineA, dashed: false) { latency($0, $0.p99) },
            line("B p99", "#d35400", timelineB, dashed: true) { latency($0, $0.p99) },
        ], xMax: xMax, yLabel: "milliseconds (log scale)", logarithmic: true, yFormat: milliseconds) + "\n"

        let methods = FleetMethod.allCases.filter { method in
            comparison.a.stats.methods[method.rawValue].requests + comparison.b.stats.methods[method.rawValue].requests > 0
        }
        func perMethod(_ value: @escaping (SecondSample.Method, Double) -> Double?) -> [SVGChart.Series] {
            methods.enumerated().flatMap { index, method in
                let color = HTMLReport.palette[index % HTMLReport.palette.count]
                // One legend entry per method, its colour (A's line); B's, dashed, has none.
                return [(timelineA, method.name, false), (timelineB, "", true)].map { timeline, name, dashed in
                    line(name, color, timeline, dashed: dashed) { value($0.methods[method.rawValue], $0.span) }
                }
            }
        }
        html += "<h2>Rate by method</h2>\n"
        html += SVGChart.lines(perMethod { entry, span in Double(entry.requests) / max(span, 1e-9) }, xMax: xMax, yLabel: "requests / s") {
            TextFormat.rate($0)
        } + "\n"
        html += "<h2>p99 by method</h2>\n"
        html += SVGChart.lines(perMethod { entry, _ in
            entry.latency.isEmpty ? nil : max(Double(entry.latency.value(atPercentile: 99)) / 1000, 0.001)
        }, xMax: xMax, yLabel: "milliseconds (log scale)", logarithmic: true, yFormat: milliseconds) + "\n"
        html += "<p class=\"muted\">Per-second percentiles come from the series' histograms (within 6.25 %); the table's from the "
            + "runs' full histograms (within 0.8 %). Generated by herald-load compare.</p>\n</body></html>\n"
        return html
    }
}
