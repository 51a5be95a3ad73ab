import Core

/// Keeps a worker from burning through an audience while a provider is down, per provider and app.
/// A batch in which at least half the pushes (and at least `minimumFailures`) failed for a transient
/// reason opens the breaker: nothing is sent for 1 s, doubled per consecutive opening up to 30 s
/// (with jitter of up to half), or for as long as the provider's `Retry-After` asks. Then one small
/// batch goes out as a probe: if it fares well the breaker closes, otherwise it opens again for longer.
/// Batches that finish while the breaker is open were sent before it opened: they change nothing.
public final class CircuitBreaker: Sendable {
    public enum Gate: Equatable {
        case closed
        /// Send a small batch to find out whether the provider is back.
        case probe
        /// Send nothing for this many seconds.
        case open(seconds: Double)
    }

    static let minimumFailures = 5
    static let firstOpenSeconds = 1.0
    static let maxOpenSeconds = 30.0
    /// The longest `Retry-After` honoured for the whole provider.
    static let maxRetryAfterSeconds = 300.0

    /// `apns`, `fcm` or `huawei`, and the application code.
    public let provider: String
    public let app: String
    private let state = Lock(State())

    struct State {
        var openUntil: Double?
        var openings = 0
        var reason = ""
    }

    public init(provider: String, app: String) {
        self.provider = provider
        self.app = app
    }

    public func gate(now: Double) -> Gate {
        state.withLock { state in
            guard let until = state.openUntil else { return .closed }
            return now < until ? .open(seconds: until - now) : .probe
        }
    }

    /// Takes the result of one batch: `transient` of `total` pushes failed for a transient reason, the
    /// most common being `reason`. `jitter` is in 0...1. Returns true when the breaker opened or closed.
    @discardableResult
    public func observe(total: Int, transient: Int, reason: String?, retryAfter: Double?, now: Double, jitter: Double) -> Bool {
        guard total > 0 else { return false }
        return state.withLock { state in
            if let until = state.openUntil, now < until { return false }
            let wasOpen = state.openUntil != nil
            let failing = transient * 2 >= total && (transient >= Self.minimumFailures || wasOpen)
            guard failing else {
                state = State()
                return wasOpen
            }
            state.openings += 1
            let backoff = min(Self.maxOpenSeconds, Self.firstOpenSeconds * Double(1 << min(state.openings - 1, 16))) * (1 - jitter / 2)
            state.openUntil = now + max(backoff, min(retryAfter ?? 0, Self.maxRetryAfterSeconds))
            state.reason = reason ?? "Unknown"
            return !wasOpen
        }
    }

    /// The breaker's state for the heartbeat.
    public func snapshot() -> WorkerStatistics.Circuit {
        state.withLock { state in
            WorkerStatistics.Circuit(provider: provider, app: app, open: state.openUntil != nil, reason: state.reason, openings: Int64(state.openings))
        }
    }
}
