import Foundation

/// `herald-load merge`: the results of a fleet's segments (`--segment i/n`, one process each) as the
/// one run they are parts of. Counts are added; each method's latency histograms are added bucket by
/// bucket, so its percentiles are those of all the parts' requests together (never averages of
/// percentiles); the series are aligned by the second of the wall clock each part started at.
enum ResultMerge {
    struct Merged {
        var result: FleetResult
        /// The segments of the fleet no file gave (`2/4`…).
        var missing: [String]
    }

    /// Merges `parts` (file name, result); refuses results that are not segments of one fleet, or
    /// that give a segment twice.
    static func merge(_ parts: [(name: String, result: FleetResult)]) throws(ResultFile.Problem) -> Merged {
        guard let (firstName, first) = parts.first else { throw ResultFile.Problem(description: "nothing to merge") }
        guard let fleet = first.options.segment else {
            throw ResultFile.Problem(description: "\(firstName) is not a --segment run: merge combines the parts of one fleet")
        }
        var seen: [Int: String] = [:]
        for (name, result) in parts {
            let options = result.options
            guard let segment = options.segment else {
                throw ResultFile.Problem(description: "\(name) is not a --segment run: merge combines the parts of one fleet")
            }
            guard segment.count == fleet.count, segment.fleetDevices == fleet.fleetDevices, options.seed == first.options.seed,
                  options.app == first.options.app, options.oneSignalFraction == first.options.oneSignalFraction,
                  options.huaweiFraction == first.options.huaweiFraction,
                  options.stages?.stages.map(\.seconds) == first.options.stages?.stages.map(\.seconds),
                  (options.rate == nil) == (first.options.rate == nil) else {
                throw ResultFile.Problem(description: "\(name) is part of another fleet than \(firstName) (segments of \(segment.count) and "
                    + "\(fleet.count), devices, seed, app, shares and schedule must agree)")
            }
            if let other = seen[segment.index] {
                throw ResultFile.Problem(description: "\(other) and \(name) are both segment \(segment)")
            }
            seen[segment.index] = name
        }

        var options = first.options
        options.segment = nil
        options.devices = parts.reduce(0) { $0 + $1.result.options.devices }
        options.connections = parts.reduce(0) { $0 + $1.result.options.connections }
        options.threads = parts.reduce(0) { $0 + $1.result.options.threads }
        options.rate = first.options.rate.map { _ in parts.reduce(0) { $0 + ($1.result.options.rate ?? 0) } }
        if let stages = first.options.stages {
            options.stages = RateStages(stages: stages.stages.indices.map { index in
                RateStages.Stage(seconds: stages.stages[index].seconds,
                                 target: parts.reduce(0) { $0 + ($1.result.options.stages?.stages[index].target ?? 0) })
            })
        }
        var stats = FleetStats()
        for part in parts { stats.merge(part.result.stats) }

        // Whole seconds between each part's start and the earliest (0 when a start is unknown).
        let starts = parts.map { $0.result.startedAt }
        let earliest = starts.compactMap { $0 }.min()
        let offsets = starts.map { start in
            start.flatMap { start in earliest.map { Int(start.timeIntervalSince($0).rounded()) } } ?? 0
        }
        let window = zip(parts, offsets).map { Double($1) + $0.result.seconds }.max() ?? 0
        options.durationSeconds = window

        var seconds: [Int: (end: Double, methods: [SecondSample.Method], errors: [ErrorKind: Int])] = [:]
        for (part, offset) in zip(parts, offsets) {
            for (index, sample) in part.result.timeline.enumerated() {
                var entry = seconds[offset + index] ?? (0, [SecondSample.Method](repeating: SecondSample.Method(), count: FleetMethod.allCases.count), [:])
                entry.errors.merge(sample.errors, uniquingKeysWith: +)
                entry.end = max(entry.end, Double(offset) + sample.elapsed)
                for method in entry.methods.indices { entry.methods[method].merge(sample.methods[method]) }
                seconds[offset + index] = entry
            }
        }
        var timeline: [SecondSample] = []
        for key in seconds.keys.sorted() {
            let entry = seconds[key]!
            timeline.append(SecondSample(elapsed: entry.end, span: entry.end - (timeline.last?.elapsed ?? 0), methods: entry.methods, errors: entry.errors))
        }

        var result = FleetResult(options: options, stats: stats, timeline: timeline, seconds: window,
                                 interrupted: parts.contains { $0.result.interrupted })
        result.startedAt = earliest
        result.heraldVersion = parts.lazy.compactMap(\.result.heraldVersion).first
        result.heraldLoadVersion = first.heraldLoadVersion
        result.mergedSegments = seen.keys.sorted().map { "\($0)/\(fleet.count)" }
        let missing = (1...fleet.count).filter { seen[$0] == nil }.map { "\($0)/\(fleet.count)" }
        return Merged(result: result, missing: missing)
    }
}
