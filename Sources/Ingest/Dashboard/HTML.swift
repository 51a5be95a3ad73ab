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

    /// A bar chart as inline SVG: one bar per value, labels under the bars, values above them.
    static func barChart(title: String, _ bars: [(label: String, value: Double, text: String)], color: String,
                         maximum: Double? = nil) -> String {
        let width = 640, height = 200, top = 24, bottom = 36
        guard !bars.isEmpty else {
            return "<figure><figcaption>\(escape(title))</figcaption><p class=\"empty\">No data yet.</p></figure>"
        }
        let peak = max(maximum ?? bars.map(\.value).max() ?? 1, 0.000001)
        let slot = Double(width) / Double(bars.count)
        let barWidth = min(48, max(2, slot * 0.7))
        var svg = "<svg role=\"img\" aria-label=\"\(escape(title))\" viewBox=\"0 0 \(width) \(height)\" width=\"\(width)\" height=\"\(height)\">"
        svg += "<line x1=\"0\" y1=\"\(height - bottom)\" x2=\"\(width)\" y2=\"\(height - bottom)\" stroke=\"#999\"/>"
        for (index, bar) in bars.enumerated() {
            let barHeight = Double(height - top - bottom) * bar.value / peak
            let x = slot * Double(index) + (slot - barWidth) / 2
            let y = Double(height - bottom) - barHeight
            svg += "<rect x=\"\(format(x))\" y=\"\(format(y))\" width=\"\(format(barWidth))\" height=\"\(format(barHeight))\" fill=\"\(color)\"><title>\(escape(bar.label)): \(escape(bar.text))</title></rect>"
            svg += "<text x=\"\(format(x + barWidth / 2))\" y=\"\(format(y - 4))\" text-anchor=\"middle\" font-size=\"11\">\(escape(bar.text))</text>"
            svg += "<text x=\"\(format(x + barWidth / 2))\" y=\"\(height - bottom + 14)\" text-anchor=\"middle\" font-size=\"10\">\(escape(bar.label))</text>"
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
