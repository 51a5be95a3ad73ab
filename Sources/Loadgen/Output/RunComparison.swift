import Foundation

/// `herald-load compare A.json B.json`: per method (and in total) the rate, p50, p95, p99 and share
/// of errors of run A and run B, with B's ratio to A (its difference for errors), and which of them
/// are regressions: B worse than A by more than the tolerance.
struct RunComparison {
    /// One method's figures in one run; latencies in µs, nil when the run measured none.
    struct Figures {
        let requests: Int
        let rate: Double
        let p50: Int64?
        let p95: Int64?
        let p99: Int64?
        /// Failed requests as a fraction of all.
        let errors: Double

        init(_ entry: MethodStats, run: FleetResult) {
            requests = entry.requests
            rate = run.seconds > 0 ? Double(entry.requests) / run.seconds : 0
            let timed = run.stats.ok > 0 && !entry.latency.isEmpty
            p50 = timed ? entry.latency.value(atPercentile: 50) : nil
            p95 = timed ? entry.latency.value(atPercentile: 95) : nil
            p99 = timed ? entry.latency.value(atPercentile: 99) : nil
            errors = entry.requests > 0 ? Double(entry.failed) / Double(entry.requests) : 0
        }
    }

    /// The figures compared, in the table's order.
    enum Figure: String, CaseIterable {
        case rate, p50, p95, p99, errors
    }

    struct Row {
        let name: String
        /// nil when the method was not called in that run.
        let a: Figures?
        let b: Figures?
        /// The figures in which B is worse than A by more than the tolerance.
        let regressions: Set<Figure>
    }

    let a: FleetResult
    let b: FleetResult
    /// A relative change that counts as a regression (0.1: rate 10 % lower, a percentile 10 % higher).
    let tolerance: Double
    let rows: [Row]

    /// An increase of the error share (in a fraction of requests) that counts as a regression.
    static let errorIncrease = 0.001

    init(_ a: FleetResult, _ b: FleetResult, tolerance: Double) {
        self.a = a
        self.b = b
        self.tolerance = tolerance
        var rows: [Row] = []
        func row(_ name: String, _ entryA: MethodStats, _ entryB: MethodStats) -> Row {
            let figuresA = entryA.requests > 0 ? Figures(entryA, run: a) : nil
            let figuresB = entryB.requests > 0 ? Figures(entryB, run: b) : nil
            var worse: Set<Figure> = []
            if let figuresA, let figuresB {
                if figuresB.rate < figuresA.rate * (1 - tolerance) { worse.insert(.rate) }
                for (figure, path) in [(Figure.p50, \Figures.p50), (.p95, \Figures.p95), (.p99, \Figures.p99)] {
                    if let valueA = figuresA[keyPath: path], let valueB = figuresB[keyPath: path], Double(valueB) > Double(valueA) * (1 + tolerance) {
                        worse.insert(figure)
                    }
                }
                if figuresB.errors - figuresA.errors >= Self.errorIncrease { worse.insert(.errors) }
            }
            return Row(name: name, a: figuresA, b: figuresB, regressions: worse)
        }
        for method in FleetMethod.allCases {
            let entryA = a.stats.methods[method.rawValue], entryB = b.stats.methods[method.rawValue]
            guard entryA.requests + entryB.requests > 0 else { continue }
            rows.append(row(method.name, entryA, entryB))
        }
        let total = { (run: FleetResult) in run.stats.methods.reduce(into: MethodStats()) { $0.merge($1) } }
        rows.append(row("total", total(a), total(b)))
        self.rows = rows
    }

    var hasRegression: Bool { rows.contains { !$0.regressions.isEmpty } }

    /// The cells of one figure: A, B and the change (`×1.25`, or `+0.500 pp` for errors), with `!`
    /// after a regression's change.
    func cells(_ row: Row, _ figure: Figure) -> [String] {
        func value(_ figures: Figures?) -> String {
            guard let figures else { return "-" }
            switch figure {
            case .rate: return TextFormat.rate(figures.rate)
            case .p50: return figures.p50.map(TextFormat.ms) ?? "-"
            case .p95: return figures.p95.map(TextFormat.ms) ?? "-"
            case .p99: return figures.p99.map(TextFormat.ms) ?? "-"
            case .errors: return TextFormat.fixed(figures.errors * 100, 3) + " %"
            }
        }
        var change = "-"
        if let figuresA = row.a, let figuresB = row.b {
            func ratio(_ valueA: Double?, _ valueB: Double?) -> String {
                guard let valueA, let valueB, valueA > 0 else { return "-" }
                return "×" + TextFormat.fixed(valueB / valueA, 2)
            }
            switch figure {
            case .rate: change = ratio(figuresA.rate, figuresB.rate)
            case .p50: change = ratio(figuresA.p50.map(Double.init), figuresB.p50.map(Double.init))
            case .p95: change = ratio(figuresA.p95.map(Double.init), figuresB.p95.map(Double.init))
            case .p99: change = ratio(figuresA.p99.map(Double.init), figuresB.p99.map(Double.init))
            case .errors:
                let points = (figuresB.errors - figuresA.errors) * 100
                change = (points >= 0 ? "+" : "−") + TextFormat.fixed(abs(points), 3) + " pp"
            }
            if row.regressions.contains(figure) { change += " !" }
        }
        return [value(row.a), value(row.b), change]
    }

    /// The header of each figure's three columns.
    static func headers(_ figure: Figure) -> [String] {
        switch figure {
        case .rate: return ["rate A", "rate B", "B/A"]
        case .errors: return ["errors A", "errors B", "B−A"]
        default: return ["\(figure.rawValue) A ms", "\(figure.rawValue) B ms", "B/A"]
        }
    }

    /// One line about a run: where, when, which builds, how much load.
    static func describe(_ run: FleetResult) -> String {
        let options = run.options
        var parts = [options.target.description, "app \(options.app)", "\(TextFormat.grouped(options.devices)) devices",
                     options.isOpenLoop ? options.modeDescription : "closed loop", "\(TextFormat.fixed(run.seconds, 1)) s"]
        if let startedAt = run.startedAt { parts.append("started \(ISO8601DateFormatter().string(from: startedAt))") }
        parts.append("herald-load \(run.heraldLoadVersion)")
        if let version = run.heraldVersion { parts.append("Herald \(version)") }
        if !run.mergedSegments.isEmpty { parts.append("segments " + run.mergedSegments.joined(separator: ", ")) }
        return parts.joined(separator: ", ")
    }

    /// What `compare` prints: both runs, the table, and the regressions.
    func render(nameA: String, nameB: String) -> String {
        var lines = ["herald-load compare", "  A  \(nameA): \(Self.describe(a))", "  B  \(nameB): \(Self.describe(b))", ""]
        let header = ["method"] + Figure.allCases.flatMap(Self.headers)
        let table = rows.map { row in [row.name] + Figure.allCases.flatMap { cells(row, $0) } }
        lines += TextFormat.columns([header] + table)
        lines.append("")
        let found = rows.flatMap { row in Figure.allCases.filter(row.regressions.contains).map { "\(row.name) \($0.rawValue)" } }
        lines.append(found.isEmpty
            ? "regressions: none (B is within \(TextFormat.fixed(tolerance * 100, 0)) % of A, errors within 0.1 pp)"
            : "regressions (marked !, B worse than A by more than \(TextFormat.fixed(tolerance * 100, 0)) %, errors by 0.1 pp): "
                + found.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }
}
