/// The edge's push count over a campaign, sampled while following it: when the first push arrived,
/// when half, 99 % and all of them had, and the rate in between. Times are seconds since
/// createMessage was sent.
struct CampaignTimeline: Equatable {
    /// (seconds, pushes received so far by the edge for this campaign), in time order.
    private(set) var samples: [(seconds: Double, pushes: Int)] = []

    static func == (left: CampaignTimeline, right: CampaignTimeline) -> Bool {
        left.samples.elementsEqual(right.samples) { $0.seconds == $1.seconds && $0.pushes == $1.pushes }
    }

    mutating func record(seconds: Double, pushes: Int) {
        if let last = samples.last, last.pushes == pushes { return }
        samples.append((seconds, pushes))
    }

    var total: Int { samples.last?.pushes ?? 0 }

    /// The first time at least `fraction` of `total` pushes had arrived (nil before any did).
    func time(reaching fraction: Double) -> Double? {
        guard total > 0 else { return nil }
        let needed = max(1, Int((Double(total) * fraction).rounded(.up)))
        return samples.first { $0.pushes >= needed }?.seconds
    }

    /// Pushes per second from the first to the last (all of them over the whole time when one sample).
    var pushesPerSecond: Double? {
        guard let first = time(reaching: 0), let all = time(reaching: 1), total > 0 else { return nil }
        return all > first ? Double(total) / (all - first) : nil
    }

    /// The pushes that arrived in each whole second since createMessage (second 1 is [0, 1)), up to
    /// the second of the last sample, which takes that sample: what `--json`'s `pushes_series` holds.
    var perSecond: [Int] {
        guard let last = samples.last else { return [] }
        let seconds = max(1, Int(last.seconds.rounded(.up)))
        var counts: [Int] = []
        var before = 0, index = 0
        for second in 1...seconds {
            var now = before
            while index < samples.count, samples[index].seconds < Double(second) || second == seconds {
                now = samples[index].pushes
                index += 1
            }
            counts.append(now - before)
            before = now
        }
        return counts
    }
}
