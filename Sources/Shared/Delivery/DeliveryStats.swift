import Synchronization
import Core

/// A worker's delivery counters, sent to ingest in every heartbeat and served on ingest's
/// `/metrics`: pushes by provider and outcome, transient failures by provider and reason, unknown
/// outcomes and connections opened per provider, a latency histogram per provider, and the circuit
/// breakers (per provider and app).
public final class DeliveryStats: Sendable {
    struct Histogram {
        var counts = [Int](repeating: 0, count: Pipeline.latencyBuckets.count)
        var sum = 0.0
        var count = 0
    }

    struct State {
        var pushes: [String: Int] = [:]
        var retries: [String: Int] = [:]
        var ambiguous: [String: Int] = [:]
        var connections: [String: Int] = [:]
        var latency: [String: Histogram] = [:]
    }

    private let state = Mutex(State())
    private let breakers = Mutex<[CircuitBreaker]>([])

    public init() {}

    /// Counts one push that ended with `outcome` at `provider` (apns, fcm, huawei or sink).
    public func count(provider: String, outcome: String) {
        state.withLock { $0.pushes["\(provider)|\(outcome)", default: 0] += 1 }
    }

    /// Counts one push that failed at `provider` for a transient `reason` and will be tried again
    /// (or has run out of time); `ambiguous` when the provider may have received it.
    public func countRetry(provider: String, reason: String, ambiguous: Bool) {
        state.withLock { state in
            state.retries["\(provider)|\(reason)", default: 0] += 1
            if ambiguous { state.ambiguous[provider, default: 0] += 1 }
        }
    }

    /// Counts a new connection to `provider`.
    public func connectionOpened(provider: String) {
        state.withLock { $0.connections[provider, default: 0] += 1 }
    }

    /// Reports `breaker`'s state in every snapshot.
    public func watch(_ breaker: CircuitBreaker) {
        breakers.withLock { $0.append(breaker) }
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

    /// `{"pushes": {"apns|sent": n}, "retries": {"apns|ServiceUnavailable": n}, "ambiguous": {"apns": n},
    /// "connections": {"apns": n}, "latency": {"apns": {"buckets": [...], "sum": s, "count": n}},
    /// "circuits": {"apns|APP": {"open": bool, "reason": …, "openings": n}}}`.
    public func snapshot() -> JSON {
        let circuits = breakers.withLock { breakers in
            Dictionary(breakers.map { ("\($0.provider)|\($0.app)", $0.snapshot()) }, uniquingKeysWith: { first, _ in first })
        }
        return state.withLock { state in
            func counts(_ values: [String: Int]) -> JSON { .object(values.mapValues { JSON.int(Int64($0)) }) }
            return [
                "pushes": counts(state.pushes),
                "retries": counts(state.retries),
                "ambiguous": counts(state.ambiguous),
                "connections": counts(state.connections),
                "latency": .object(state.latency.mapValues { histogram in
                    ["buckets": .array(histogram.counts.map { JSON.int(Int64($0)) }), "sum": .double(histogram.sum),
                     "count": .int(Int64(histogram.count))]
                }),
                "circuits": .object(circuits),
            ]
        }
    }
}
