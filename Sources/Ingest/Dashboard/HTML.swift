/// Small helpers for the server-rendered dashboard: escaping and inline SVG charts.
enum HTML {
    /// Escapes text for HTML element content and attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// A section: its heading, then a table of `rows` (every cell escaped), or `empty` when there are
    /// none. Columns named in `numeric` are right-aligned.
    static func section(_ heading: String, columns: [String], numeric: Set<String> = [], rows: [[String]], empty: String,
                        emptyClass: String = "empty") -> String {
        var html = "<h2>\(escape(heading))</h2>"
        guard !rows.isEmpty else { return html + "<p class=\"\(emptyClass)\">\(escape(empty))</p>" }
        func cell(_ tag: String, _ column: String, _ text: String) -> String {
            let align = numeric.contains(column) ? " class=\"n\"" : ""
            return "<\(tag)\(align)>\(escape(text))</\(tag)>"
        }
        html += "<table><thead><tr>" + columns.map { cell("th", $0, $0) }.joined() + "</tr></thead><tbody>"
        for row in rows { html += "<tr>" + zip(columns, row).map { cell("td", $0, $1) }.joined() + "</tr>" }
        return html + "</tbody></table>"
    }

    static func percent(_ part: Int, of whole: Int) -> String {
        guard whole > 0 else { return "–" }
        let value = Double(part) * 100 / Double(whole)
        return String(Int((value * 10).rounded())).inserting(decimalBefore: 1) + "%"
    }

    /// A bar chart as inline SVG that scales to its figure's width (CSS `width: 100%`): one bar per
    /// value, its label under it (slanted when the labels would not fit side by side) and its value
    /// above it (left to the tooltip when bars are too narrow for it).
    static func barChart(title: String, _ bars: [(label: String, value: Double, text: String)], color: String,
                         maximum: Double? = nil) -> String {
        guard !bars.isEmpty else {
            return "<figure><figcaption>\(escape(title))</figcaption><p class=\"empty\">No data yet.</p></figure>"
        }
        let width = 1000.0, fontSize = 12.0, characterWidth = 7.0
        let longest = Double(bars.map(\.label.count).max() ?? 0) * characterWidth
        let slanted = longest > width / Double(bars.count) - 4
        // Slanted labels reach left of their bar: the first one needs room.
        let left = slanted ? longest * 0.72 : 0
        let slot = (width - left) / Double(bars.count)
        let top = 24.0, plot = 160.0, bottom = slanted ? longest * 0.72 + 16 : 22
        let height = top + plot + bottom
        let peak = max(maximum ?? bars.map(\.value).max() ?? 1, 0.000001)
        let barWidth = min(60, max(2, slot * 0.7))
        let showValues = slot >= Double(bars.map(\.text.count).max() ?? 0) * characterWidth
        var svg = "<svg role=\"img\" aria-label=\"\(escape(title))\" viewBox=\"0 0 \(format(width)) \(format(height))\" "
        svg += "font-size=\"\(format(fontSize))\" preserveAspectRatio=\"xMidYMid meet\">"
        svg += "<line x1=\"0\" y1=\"\(format(top + plot))\" x2=\"\(format(width))\" y2=\"\(format(top + plot))\" stroke=\"#999\"/>"
        for (index, bar) in bars.enumerated() {
            let barHeight = plot * min(bar.value / peak, 1)
            let center = left + slot * (Double(index) + 0.5)
            let y = top + plot - barHeight
            svg += "<rect x=\"\(format(center - barWidth / 2))\" y=\"\(format(y))\" width=\"\(format(barWidth))\" height=\"\(format(barHeight))\" "
            svg += "fill=\"\(color)\"><title>\(escape(bar.label)): \(escape(bar.text))</title></rect>"
            if showValues {
                svg += "<text x=\"\(format(center))\" y=\"\(format(y - 5))\" text-anchor=\"middle\">\(escape(bar.text))</text>"
            }
            let labelY = top + plot + 16
            if slanted {
                svg += "<text x=\"\(format(center))\" y=\"\(format(labelY))\" text-anchor=\"end\" "
                svg += "transform=\"rotate(-45 \(format(center)) \(format(labelY)))\">\(escape(bar.label))</text>"
            } else {
                svg += "<text x=\"\(format(center))\" y=\"\(format(labelY))\" text-anchor=\"middle\">\(escape(bar.label))</text>"
            }
        }
        svg += "</svg>"
        return "<figure><figcaption>\(escape(title))</figcaption>\(svg)</figure>"
    }

    static func format(_ value: Double) -> String { String(Int((value * 10).rounded())).inserting(decimalBefore: 1) }
}

extension String {
    /// "1234" → "123.4" (the last `digits` digits become decimals).
    func inserting(decimalBefore digits: Int) -> String {
        var text = self
        let negative = text.hasPrefix("-")
        if negative { text.removeFirst() }
        while text.count <= digits { text = "0" + text }
        text.insert(".", at: text.index(text.endIndex, offsetBy: -digits))
        return (negative ? "-" : "") + text
    }
}
