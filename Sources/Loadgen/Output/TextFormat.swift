/// Number formatting for the terminal and the report: thousands separators, fixed decimals.
enum TextFormat {
    /// `1234567` → `1,234,567`.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (offset, character) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return value < 0 ? "-" + out : out
    }

    /// `value` with `places` decimals (no locale).
    static func fixed(_ value: Double, _ places: Int) -> String {
        guard value.isFinite else { return "-" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (value.magnitude * scale).rounded()
        let whole = Int(scaled / scale)
        var text = (value < 0 && scaled > 0 ? "-" : "") + String(whole)
        if places > 0 {
            let fraction = Int(scaled - Double(whole) * scale)
            let fractionText = String(fraction)
            text += "." + String(repeating: "0", count: places - fractionText.count) + fractionText
        }
        return text
    }

    /// Microseconds as milliseconds: 2 decimals below 100 ms, 1 below 10 s, none above.
    static func ms(_ microseconds: Int64) -> String {
        let value = Double(microseconds) / 1000
        if value < 100 { return fixed(value, 2) }
        if value < 10_000 { return fixed(value, 1) }
        return fixed(value, 0)
    }

    /// A rate: grouped whole numbers from 100 up, one decimal below.
    static func rate(_ value: Double) -> String {
        value >= 100 ? grouped(Int(value.rounded())) : fixed(value, 1)
    }

    /// `50`, `99.9`, `99.99`: a percentile as a key or a column name.
    static func percentileName(_ percentile: Double) -> String {
        for places in 0...3 {
            let text = fixed(percentile, places)
            if Double(text) == percentile { return text }
        }
        return fixed(percentile, 3)
    }

    /// Bytes as `12.3 MB` (decimal units).
    static func bytes(_ count: Int) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(count) B" : "\(fixed(value, 1)) \(units[unit])"
    }

    static func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    static func padRight(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// Rows as aligned columns two spaces apart: the first left-aligned, the others right-aligned.
    static func columns(_ rows: [[String]]) -> [String] {
        let widths = (rows.first ?? []).indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { cells in
            cells.enumerated().map { column, cell in
                column == 0 ? padRight(cell, widths[0]) : padLeft(cell, widths[column])
            }.joined(separator: "  ")
        }
    }
}
