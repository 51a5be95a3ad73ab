import Foundation

/// Line and bar charts as inline SVG, with no script and no external resource, so that a report
/// opens anywhere, offline.
enum SVGChart {
    struct Series {
        let name: String
        let color: String
        /// (x, y) points; y nil leaves a gap.
        let points: [(Double, Double?)]
        var dashed = false
    }

    static let width = 860.0
    static let height = 280.0
    static let left = 70.0
    static let right = 20.0
    static let top = 20.0
    static let bottom = 60.0

    /// A line chart over `xMax` seconds. `logarithmic` draws y on a log scale (latencies).
    static func lines(_ series: [Series], xMax: Double, yLabel: String, logarithmic: Bool = false,
                      yFormat: (Double) -> String) -> String {
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let values = series.flatMap { $0.points.compactMap(\.1) }
        let positive = values.filter { $0 > 0 }
        var yMin = 0.0
        var yMax = max(values.max() ?? 1, 1e-9)
        var ticks: [Double]
        if logarithmic {
            yMin = pow10(floor(log10(positive.min() ?? 0.1)))
            yMax = pow10(ceil(log10(max(positive.max() ?? 1, yMin * 10))))
            ticks = []
            var tick = yMin
            while tick <= yMax * 1.0001 {
                ticks.append(tick)
                tick *= 10
            }
        } else {
            // A little headroom, so that a flat line at the top is not drawn on the frame.
            let step = niceStep(yMax * 1.1 / 5)
            yMax = (yMax * 1.1 / step).rounded(.up) * step
            ticks = stride(from: 0.0, through: yMax + step / 2, by: step).map { $0 }
        }
        let xMaxValue = max(xMax, 1)
        func x(_ value: Double) -> Double { left + value / xMaxValue * plotWidth }
        func y(_ value: Double) -> Double {
            if logarithmic {
                let clamped = max(value, yMin)
                return top + plotHeight - (log10(clamped) - log10(yMin)) / (log10(yMax) - log10(yMin)) * plotHeight
            }
            return top + plotHeight - value / yMax * plotHeight
        }
        var svg = "<rect x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotWidth))\" height=\"\(n(plotHeight))\" fill=\"#fafafa\" stroke=\"#ccc\"/>"
        for tick in ticks {
            let position = y(tick)
            svg += "<line x1=\"\(n(left))\" x2=\"\(n(left + plotWidth))\" y1=\"\(n(position))\" y2=\"\(n(position))\" stroke=\"#e3e3e3\"/>"
            svg += "<text x=\"\(n(left - 6))\" y=\"\(n(position + 4))\" text-anchor=\"end\" class=\"tick\">\(HTMLReport.escape(yFormat(tick)))</text>"
        }
        let xStep = niceStep(xMaxValue / 8)
        for tick in stride(from: 0.0, through: xMaxValue + 1e-9, by: xStep) {
            let position = x(tick)
            svg += "<line x1=\"\(n(position))\" x2=\"\(n(position))\" y1=\"\(n(top + plotHeight))\" y2=\"\(n(top + plotHeight + 4))\" stroke=\"#999\"/>"
            svg += "<text x=\"\(n(position))\" y=\"\(n(top + plotHeight + 18))\" text-anchor=\"middle\" class=\"tick\">\(TextFormat.fixed(tick, tick < 10 && xStep < 1 ? 1 : 0)) s</text>"
        }
        svg += "<text x=\"16\" y=\"\(n(top + plotHeight / 2))\" transform=\"rotate(-90 16 \(n(top + plotHeight / 2)))\" text-anchor=\"middle\" class=\"axis\">\(HTMLReport.escape(yLabel))</text>"
        for item in series {
            var path = ""
            var pen = false
            for (px, py) in item.points {
                guard let py else {
                    pen = false
                    continue
                }
                path += (pen ? "L" : "M") + "\(n(x(px))),\(n(y(py)))"
                pen = true
            }
            guard !path.isEmpty else { continue }
            svg += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(item.color)\" stroke-width=\"1.8\"\(item.dashed ? " stroke-dasharray=\"5 3\"" : "")>"
            svg += "<title>\(HTMLReport.escape(item.name))</title></path>"
            if item.points.compactMap(\.1).count == 1, let only = item.points.first(where: { $0.1 != nil }) {
                svg += "<circle cx=\"\(n(x(only.0)))\" cy=\"\(n(y(only.1!)))\" r=\"3\" fill=\"\(item.color)\"/>"
            }
        }
        // Legend under the plot, in as many rows as it needs; a series without a name has no entry.
        var legendX = left
        var legendY = height - 14
        for item in series where !item.name.isEmpty {
            let entryWidth = 40 + Double(item.name.count) * 7.5
            if legendX > left && legendX + entryWidth > width - right {
                legendX = left
                legendY += 20
            }
            svg += "<line x1=\"\(n(legendX))\" x2=\"\(n(legendX + 22))\" y1=\"\(n(legendY - 4))\" y2=\"\(n(legendY - 4))\" stroke=\"\(item.color)\" stroke-width=\"2.5\"\(item.dashed ? " stroke-dasharray=\"5 3\"" : "")/>"
            svg += "<text x=\"\(n(legendX + 28))\" y=\"\(n(legendY))\" class=\"legend\">\(HTMLReport.escape(item.name))</text>"
            legendX += entryWidth
        }
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(n(width)) \(n(legendY + 14))\" role=\"img\">" + svg + "</svg>"
    }

    /// Horizontal bars, one per (label, value), longest first as given.
    static func bars(_ entries: [(label: String, value: Int, color: String)]) -> String {
        let rowHeight = 26.0
        let labelWidth = 210.0
        let chartHeight = max(40, Double(entries.count) * rowHeight + 10)
        let plotWidth = width - labelWidth - 90
        let maximum = Double(entries.map(\.value).max() ?? 1)
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(n(width)) \(n(chartHeight))\" role=\"img\">"
        for (index, entry) in entries.enumerated() {
            let rowY = 5 + Double(index) * rowHeight
            let barWidth = max(2, Double(entry.value) / max(maximum, 1) * plotWidth)
            svg += "<text x=\"\(n(labelWidth - 8))\" y=\"\(n(rowY + 16))\" text-anchor=\"end\" class=\"legend\">\(HTMLReport.escape(entry.label))</text>"
            svg += "<rect x=\"\(n(labelWidth))\" y=\"\(n(rowY + 3))\" width=\"\(n(barWidth))\" height=\"\(n(rowHeight - 8))\" fill=\"\(entry.color)\"><title>\(HTMLReport.escape(entry.label)): \(entry.value)</title></rect>"
            svg += "<text x=\"\(n(labelWidth + barWidth + 6))\" y=\"\(n(rowY + 16))\" class=\"legend\">\(TextFormat.grouped(entry.value))</text>"
        }
        return svg + "</svg>"
    }

    /// A step of 1, 2 or 5 × 10^k close to `raw`.
    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let magnitude = pow10(floor(log10(raw)))
        let fraction = raw / magnitude
        let nice: Double = fraction <= 1 ? 1 : (fraction <= 2 ? 2 : (fraction <= 5 ? 5 : 10))
        return nice * magnitude
    }

    static func pow10(_ exponent: Double) -> Double {
        var result = 1.0
        let steps = Int(exponent.magnitude)
        for _ in 0..<steps { result *= 10 }
        return exponent < 0 ? 1 / result : result
    }

    static func log10(_ value: Double) -> Double { Foundation.log10(value) }

    /// Coordinates with one decimal.
    static func n(_ value: Double) -> String { TextFormat.fixed(value, 1) }
}
