/// An open loop's rate over time (`--stages "30s:1000,2m:5000,30s:0"`, as k6's ramping arrival
/// rate): each stage moves the rate in a straight line from where the previous one ended (0 before
/// the first) to its target over its duration; after the last stage nothing more is due. A
/// constant `--rate R` is one stage that starts and stays at R.
struct RateStages: Equatable, CustomStringConvertible {
    struct Stage: Equatable {
        let seconds: Double
        let target: Double
    }

    /// The rate at the start of the first stage.
    let initialRate: Double
    let stages: [Stage]

    /// A constant rate for `seconds`.
    init(constant rate: Double, seconds: Double) {
        initialRate = rate
        stages = [Stage(seconds: seconds, target: rate)]
    }

    init(stages: [Stage]) {
        initialRate = 0
        self.stages = stages
    }

    /// Parses `DURATION:TARGET,…` (durations as `--duration` takes them: 30, 30s, 2m, 1h).
    init(parsing text: String) throws(FleetOptions.Problem) {
        var stages: [Stage] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            guard pieces.count == 2 else {
                throw FleetOptions.Problem("--stages must be DURATION:RATE stages separated by commas, such as '30s:1000,2m:5000,30s:0', got '\(text)'")
            }
            let seconds = try FleetOptions.seconds("--stages", String(pieces[0]))
            guard let target = Double(pieces[1]), target.isFinite, target >= 0, target <= 10_000_000 else {
                throw FleetOptions.Problem("--stages: each stage's rate must be requests per second from 0 to 10000000, got '\(pieces[1])'")
            }
            stages.append(Stage(seconds: seconds, target: target))
        }
        self.init(stages: stages)
        guard totalRequests >= 1 else { throw FleetOptions.Problem("--stages schedule no request: '\(text)'") }
    }

    var seconds: Double { stages.reduce(0) { $0 + $1.seconds } }

    /// The highest rate any stage reaches.
    var peakRate: Double { stages.reduce(initialRate) { max($0, $1.target) } }

    /// Requests due over the whole run (the area under the rate).
    var totalRequests: Double { requests(before: seconds) }

    /// `30s:1000,120s:5000,30s:0`.
    var description: String {
        func plain(_ value: Double) -> String { value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value) }
        return stages.map { "\(plain($0.seconds))s:\(plain($0.target))" }.joined(separator: ",")
    }

    /// The rate `seconds` after the start.
    func rate(at seconds: Double) -> Double {
        var start = 0.0, from = initialRate
        for stage in stages {
            if seconds < start + stage.seconds { return from + (stage.target - from) * (seconds - start) / stage.seconds }
            start += stage.seconds
            from = stage.target
        }
        return 0
    }

    /// How many requests are due in the first `seconds` (fractional).
    func requests(before seconds: Double) -> Double {
        var start = 0.0, from = initialRate, total = 0.0
        for stage in stages {
            let span = min(max(seconds - start, 0), stage.seconds)
            let reached = from + (stage.target - from) * span / stage.seconds
            total += (from + reached) / 2 * span
            if seconds <= start + stage.seconds { return total }
            start += stage.seconds
            from = stage.target
        }
        return total
    }

    /// When request `number` (0, 1, 2…) is due, in seconds after the start; nil when the stages end first.
    func due(_ number: Double) -> Double? {
        var start = 0.0, from = initialRate, total = 0.0
        for stage in stages {
            let area = (from + stage.target) / 2 * stage.seconds
            if number < total + area || (number == total && area > 0) {
                // Solve total + from·x + slope/2·x² = number for x in [0, stage.seconds].
                let needed = number - total
                let slope = (stage.target - from) / stage.seconds
                let x: Double
                if abs(slope) < 1e-12 {
                    x = needed / from
                } else {
                    x = (-from + (max(0, from * from + 2 * slope * needed)).squareRoot()) / slope
                }
                return start + min(max(x, 0), stage.seconds)
            }
            total += area
            start += stage.seconds
            from = stage.target
        }
        return nil
    }
}
