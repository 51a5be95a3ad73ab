/// A pass/fail criterion on a fleet's results (`--threshold`), as CI checks a run: a figure of one
/// method (or of all requests), a comparison, and a bound.
///
/// `[METHOD.]FIGURE OP VALUE`, where METHOD is a method name as the summary shows it
/// (`registerDevice`, `onesignal/adddevice`…) or `total` (the default), OP is `<`, `<=`, `>` or `>=`,
/// and FIGURE is one of
/// - `pN` (any percentile 0 < N ≤ 100: `p50`, `p99`, `p99.9`), `max` or `mean`: latency, VALUE
///   in `us`, `ms` (the default) or `s`;
/// - `errors`: the share of requests that failed, VALUE a percentage (`0.1%`) or a fraction;
/// - `rate`: requests per second (all methods, over the sending window; `total` only).
struct Threshold: Equatable, CustomStringConvertible {
    enum Figure: Equatable {
        case percentile(Double)
        case max
        case mean
        case errors
        case rate
    }

    enum Comparison: String, CaseIterable {
        case lessOrEqual = "<="
        case greaterOrEqual = ">="
        case less = "<"
        case greater = ">"

        func holds(_ value: Double, _ bound: Double) -> Bool {
            switch self {
            case .less: return value < bound
            case .lessOrEqual: return value <= bound
            case .greater: return value > bound
            case .greaterOrEqual: return value >= bound
            }
        }
    }

    /// The method, or nil for all requests.
    let method: FleetMethod?
    let figure: Figure
    let comparison: Comparison
    /// The bound in the figure's unit: microseconds for latency, a fraction for errors, requests/s for rate.
    let bound: Double
    /// The expression as written (how tables and messages name it).
    let description: String

    /// Parses one `--threshold` expression.
    init(parsing text: String) throws(FleetOptions.Problem) {
        description = text
        let compact = text.filter { !$0.isWhitespace }
        guard let comparison = Comparison.allCases.first(where: { compact.contains($0.rawValue) }),
              let range = compact.range(of: comparison.rawValue) else {
            throw FleetOptions.Problem("--threshold '\(text)' needs a comparison: <, <=, > or >= (such as 'registerDevice.p99<50ms')")
        }
        self.comparison = comparison
        let subject = String(compact[..<range.lowerBound])
        let value = String(compact[range.upperBound...])
        // METHOD.FIGURE: method names hold no dot; a dot after `p` and digits is a percentile's (`p99.9`).
        var methodName = "total"
        var figureName = subject
        if let dot = subject.firstIndex(of: ".") {
            let prefix = subject[..<dot]
            let isPercentile = prefix.hasPrefix("p") && prefix.count > 1 && prefix.dropFirst().allSatisfy(\.isNumber)
            if !isPercentile {
                methodName = String(prefix)
                figureName = String(subject[subject.index(after: dot)...])
            }
        }
        if methodName == "total" {
            method = nil
        } else if let known = FleetMethod.allCases.first(where: { $0.name == methodName }) {
            method = known
        } else {
            throw FleetOptions.Problem("--threshold '\(text)': no method \(methodName) (one of total, "
                + FleetMethod.allCases.map(\.name).joined(separator: ", ") + ")")
        }
        switch figureName {
        case "max": figure = .max
        case "mean": figure = .mean
        case "errors": figure = .errors
        case "rate": figure = .rate
        default:
            guard figureName.hasPrefix("p"), let percentile = Double(figureName.dropFirst()), percentile > 0, percentile <= 100 else {
                throw FleetOptions.Problem("--threshold '\(text)': no figure \(figureName) (pN such as p99 or p99.9, max, mean, errors, rate)")
            }
            figure = .percentile(percentile)
        }
        if figure == .rate && method != nil {
            throw FleetOptions.Problem("--threshold '\(text)': rate is of all requests (write 'rate>1000')")
        }
        bound = try Self.bound(value, figure: figure, text: text)
    }

    private static func bound(_ value: String, figure: Figure, text: String) throws(FleetOptions.Problem) -> Double {
        func number(_ digits: Substring) throws(FleetOptions.Problem) -> Double {
            guard let number = Double(digits), number.isFinite, number >= 0 else {
                throw FleetOptions.Problem("--threshold '\(text)': '\(value)' is not a number ≥ 0")
            }
            return number
        }
        switch figure {
        case .errors:
            return value.hasSuffix("%") ? try number(value.dropLast()) / 100 : try number(Substring(value))
        case .rate:
            return try number(Substring(value.hasSuffix("/s") ? String(value.dropLast(2)) : value))
        case .percentile, .max, .mean:
            for (unit, scale) in [("us", 1.0), ("ms", 1_000.0), ("s", 1_000_000.0)] where value.hasSuffix(unit) {
                return try number(value.dropLast(unit.count)) * scale
            }
            if value.last?.isLetter == true {
                throw FleetOptions.Problem("--threshold '\(text)': latency is in us, ms or s")
            }
            return try number(Substring(value)) * 1_000
        }
    }

    /// The figure measured in `result` (in the bound's unit), or nil when there is none: a method
    /// never called, or latency of a run in which nothing succeeded.
    func measure(_ result: FleetResult) -> Double? {
        let stats = result.stats
        let entry = method.map { stats.methods[$0.rawValue] } ?? stats.methods.reduce(into: MethodStats()) { $0.merge($1) }
        switch figure {
        case .errors:
            return entry.requests > 0 ? Double(entry.failed) / Double(entry.requests) : nil
        case .rate:
            return result.achievedRate
        case .percentile, .max, .mean:
            guard stats.ok > 0, !entry.latency.isEmpty else { return nil }
            switch figure {
            case .percentile(let percentile): return Double(entry.latency.value(atPercentile: percentile))
            case .max: return Double(entry.latency.max)
            default: return entry.latency.mean
            }
        }
    }

    /// The measured figure as the table shows it.
    func format(_ value: Double?) -> String {
        guard let value else { return "no data" }
        switch figure {
        case .errors: return TextFormat.fixed(value * 100, 3) + " %"
        case .rate: return TextFormat.rate(value) + " req/s"
        case .percentile, .max, .mean: return TextFormat.fixed(value / 1_000, 2) + " ms"
        }
    }

    /// One threshold's verdict.
    struct Verdict {
        let threshold: Threshold
        let value: Double?
        var passed: Bool { value.map { threshold.comparison.holds($0, threshold.bound) } ?? false }
    }

    /// The verdicts of `thresholds` on `result`, in order.
    static func evaluate(_ thresholds: [Threshold], on result: FleetResult) -> [Verdict] {
        thresholds.map { Verdict(threshold: $0, value: $0.measure(result)) }
    }

    /// The table printed at the end: each threshold, its measured value, and ok or FAILED.
    static func table(_ verdicts: [Verdict]) -> String {
        let width = verdicts.map(\.threshold.description.count).max() ?? 0
        let values = verdicts.map { $0.threshold.format($0.value) }
        let valueWidth = values.map(\.count).max() ?? 0
        var lines = ["thresholds:"]
        for (verdict, value) in zip(verdicts, values) {
            lines.append("  " + TextFormat.padRight(verdict.threshold.description, width) + "  " + TextFormat.padLeft(value, valueWidth)
                + "  " + (verdict.passed ? "ok" : "FAILED"))
        }
        return lines.joined(separator: "\n")
    }
}
