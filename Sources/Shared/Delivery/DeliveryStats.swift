import Synchronization
import Core

/// A worker's delivery counters, sent to ingest in every heartbeat and served on ingest's
/// `/metrics`: pushes by provider and outcome, and a latency histogram per provider.
public final class DeliveryStats: Sendable {
    struct Histogram {
        var counts = [Int](repeating: 0, count: Pipeline.latencyBuckets.count)
        var sum = 0.0
        var count = 0
    }

    private let state = Mutex<(pushes: [String: Int], latency: [String: Histogram])>(([:], [:]))

    public init() {}

    /// Counts one push that ended with `outcome` at `provider` (apns, fcm or sink).
    public func count(provider: String, outcome: String) {
        state.withLock { $0.pushes["\(provider)|\(outcome)", default: 0] += 1 }
    }

    /// Records how long one request to `provider` took.
    public func observe(provider: String, seconds: Double) {
        state.withLock { state in
            var histogram = state.latency[provider] ?? Histogram()
            if let bucket = Pipeline.latencyBuckets.firstIndex(where: { seconds <= $0 }) { histogram.counts[bucket] += 1 }
            histogram.sum += seconds
            histogram.count += 1
            state.latency[provider] = histogram
        }
    }

    /// `{"pushes": {"apns|sent": n}, "latency": {"apns": {"buckets": [...], "sum": s, "count": n}}}`.
    public func snapshot() -> JSON {
        state.withLock { state in
            [
                "pushes": .object(state.pushes.mapValues { JSON.int(Int64($0)) }),
                "latency": .object(state.latency.mapValues { histogram in
                    ["buckets": .array(histogram.counts.map { JSON.int(Int64($0)) }), "sum": .double(histogram.sum),
                     "count": .int(Int64(histogram.count))]
                }),
            ]
        }
    }
}
