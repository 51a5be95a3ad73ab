import Core

/// A worker's delivery counters, sent to ingest in every heartbeat (as `WorkerStatistics`) and
/// served on ingest's `/metrics`: pushes by provider and outcome, transient failures by provider and reason, unknown
/// outcomes and connections opened per provider, a latency histogram per provider, and the circuit
/// breakers (per provider and app).
public final class DeliveryStats: Sendable {
    struct Histogram {
        var counts = [Int](repeating: 0, count: Pipeline.latencyBuckets.count)
        var sum = 0.0
        var count = 0

        mutating func add(_ seconds: Double, bucket: Int?) {
            if let bucket { counts[bucket] += 1 }
            sum += seconds
            count += 1
        }
    }

    /// A provider and a second label (an outcome or a reason).
    public struct Key: Hashable, Sendable {
        public let provider: String
        public let detail: String

        public init(provider: String, detail: String) {
            self.provider = provider
            self.detail = detail
        }
    }

    struct State {
        var pushes: [Key: Int] = [:]
        var retries: [Key: Int] = [:]
        var ambiguous: [String: Int] = [:]
        var connections: [String: Int] = [:]
        var latency: [String: Histogram] = [:]
    }

    private let state = Lock(State())
    private let breakers = Lock<[CircuitBreaker]>([])

    public init() {}

    /// Counts one push that ended with `outcome` at `provider` (apns, fcm, huawei or sink).
    public func count(provider: String, outcome: String) {
        count([Key(provider: provider, detail: outcome): 1])
    }

    /// Counts pushes by provider and outcome (`detail`), a batch's worth under one lock.
    public func count(_ pushes: [Key: Int]) {
        guard !pushes.isEmpty else { return }
        state.withLock { state in
            for (key, count) in pushes { state.pushes[key, default: 0] += count }
        }
    }

    /// Counts one push that failed at `provider` for a transient `reason` and will be tried again
    /// (or has run out of time); `ambiguous` when the provider may have received it.
    public func countRetry(provider: String, reason: String, ambiguous: Bool) {
        state.withLock { state in
            state.retries[Key(provider: provider, detail: reason), default: 0] += 1
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
        let bucket = Pipeline.latencyBuckets.firstIndex { seconds <= $0 }
        state.withLock { state in
            // Changed in place: a copy of the histogram would copy its counts on every request.
            state.latency[provider, default: Histogram()].add(seconds, bucket: bucket)
        }
    }

    /// The counters so far, with this process's figures, for the heartbeat.
    public func snapshot() -> WorkerStatistics {
        let circuits = breakers.withLock { $0.map { $0.snapshot() } }
        var statistics = state.withLock { state in
            var statistics = WorkerStatistics()
            statistics.pushes = state.pushes.map { key, count in
                WorkerStatistics.PushCount(provider: key.provider, outcome: key.detail, count: Int64(count))
            }
            statistics.retries = state.retries.map { key, count in
                WorkerStatistics.RetryCount(provider: key.provider, reason: key.detail, count: Int64(count))
            }
            statistics.ambiguous = state.ambiguous.map { WorkerStatistics.ProviderCount(provider: $0.key, count: Int64($0.value)) }
            statistics.connections = state.connections.map { WorkerStatistics.ProviderCount(provider: $0.key, count: Int64($0.value)) }
            statistics.latency = state.latency.map { provider, histogram in
                WorkerStatistics.Latency(provider: provider, buckets: histogram.counts.map(Int64.init), sum: histogram.sum, count: Int64(histogram.count))
            }
            return statistics
        }
        statistics.circuits = circuits
        statistics.process = ProcessFigures.current()
        return statistics
    }
}
