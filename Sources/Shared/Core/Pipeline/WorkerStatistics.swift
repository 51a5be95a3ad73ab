import Foundation

/// What a worker reports about its deliveries and its process in every heartbeat, and what ingest
/// serves on `/metrics` and the dashboard: one `Codable` type that both sides compile, carried as
/// the heartbeat's `stats` object (snake_case keys).
public struct WorkerStatistics: Codable, Sendable, Equatable {
    /// Pushes that ended with `outcome` at `provider` (apns, fcm, sink; none when throttled).
    public struct PushCount: Codable, Sendable, Equatable {
        public var provider: String
        public var outcome: String
        public var count: Int64
        public init(provider: String, outcome: String, count: Int64) { (self.provider, self.outcome, self.count) = (provider, outcome, count) }
    }

    /// Pushes that failed at `provider` for a transient `reason`.
    public struct RetryCount: Codable, Sendable, Equatable {
        public var provider: String
        public var reason: String
        public var count: Int64
        public init(provider: String, reason: String, count: Int64) { (self.provider, self.reason, self.count) = (provider, reason, count) }
    }

    /// A count per provider.
    public struct ProviderCount: Codable, Sendable, Equatable {
        public var provider: String
        public var count: Int64
        public init(provider: String, count: Int64) { (self.provider, self.count) = (provider, count) }
    }

    /// Request durations at `provider`: counts per bucket of `Pipeline.latencyBuckets` (not
    /// cumulative), their sum in seconds and their number (those above the last bound included).
    public struct Latency: Codable, Sendable, Equatable {
        public var provider: String
        public var buckets: [Int64]
        public var sum: Double
        public var count: Int64
        public init(provider: String, buckets: [Int64], sum: Double, count: Int64) {
            (self.provider, self.buckets, self.sum, self.count) = (provider, buckets, sum, count)
        }
    }

    /// A circuit breaker of one provider for one app.
    public struct Circuit: Codable, Sendable, Equatable {
        public var provider: String
        public var app: String
        public var open: Bool
        public var reason: String
        public var openings: Int64
        public init(provider: String, app: String, open: Bool, reason: String, openings: Int64) {
            (self.provider, self.app, self.open, self.reason, self.openings) = (provider, app, open, reason, openings)
        }
    }

    public var pushes: [PushCount] = []
    public var retries: [RetryCount] = []
    /// Pushes whose connection was lost after the request was written, per provider.
    public var ambiguous: [ProviderCount] = []
    /// Connections opened, per provider.
    public var connections: [ProviderCount] = []
    public var latency: [Latency] = []
    public var circuits: [Circuit] = []
    /// The worker process's CPU time, resident memory and start (nil from a worker that does not say).
    public var process: ProcessFigures?

    public init() {}

    /// The most entries a section may hold, and the longest name in it.
    public static let maximumEntries = 256
    public static let maximumNameLength = 200

    /// Whether the statistics are within bounds: at most 256 entries a section, names of 1–200
    /// characters, counts and sums not negative, one count per latency bucket.
    public var isValid: Bool {
        func name(_ text: String) -> Bool { !text.isEmpty && text.count <= Self.maximumNameLength }
        let sections = [pushes.count, retries.count, ambiguous.count, connections.count, latency.count, circuits.count]
        guard sections.allSatisfy({ $0 <= Self.maximumEntries }) else { return false }
        return pushes.allSatisfy { name($0.provider) && name($0.outcome) && $0.count >= 0 }
            && retries.allSatisfy { name($0.provider) && name($0.reason) && $0.count >= 0 }
            && (ambiguous + connections).allSatisfy { name($0.provider) && $0.count >= 0 }
            && latency.allSatisfy { histogram in
                name(histogram.provider) && histogram.buckets.count == Pipeline.latencyBuckets.count && histogram.buckets.allSatisfy { $0 >= 0 }
                    && histogram.sum >= 0 && histogram.sum.isFinite && histogram.count >= histogram.buckets.reduce(0, +)
            }
            && circuits.allSatisfy { name($0.provider) && name($0.app) && $0.reason.count <= Self.maximumNameLength && $0.openings >= 0 }
            && (process?.isValid ?? true)
    }

    /// The statistics as the heartbeat's `stats` object.
    public var json: JSON {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        guard let data = try? encoder.encode(self), let json = try? JSON.parse(Array(data)) else { return [:] }
        return json
    }

    /// Statistics read from a heartbeat's `stats` object: nil when it has another shape or is out of bounds.
    public init?(json: JSON) {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard let decoded = try? decoder.decode(WorkerStatistics.self, from: Data(json.encoded())), decoded.isValid else { return nil }
        self = decoded
    }
}
