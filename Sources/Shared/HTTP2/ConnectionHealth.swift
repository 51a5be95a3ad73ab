/// When a libcurl loop may start transfers, so that a broken provider connection is re-established
/// once, after a back-off, rather than once per waiting request.
///
/// - `healthy`: every transfer starts (up to the in-flight limit).
/// - A transfer that fails at the connection level (refused, reset, TLS, no answer) makes the loop
///   `waiting`: nothing starts until the back-off (0.25 s, doubled per failed probe up to 10 s, with
///   jitter of up to half) has passed.
/// - Then one transfer starts alone as the `probing` one: any HTTP answer makes the loop healthy
///   again; a connection failure doubles the back-off, and from then on the waiting transfers fail at
///   once (not sent) instead of queueing behind a provider that is down.
struct ConnectionHealth {
    enum State: Equatable {
        case healthy
        case waiting(until: Double, failFast: Bool)
        case probing
    }

    /// What the loop may start now.
    enum Admission: Equatable {
        case all
        case probe
        case none
        /// Nothing; fail the queued transfers as not sent.
        case failQueued
    }

    static let firstDelay = 0.25
    static let maxDelay = 10.0

    private(set) var state = State.healthy
    private(set) var delay = 0.0
    /// The last connection error, for the message of the transfers failed while waiting.
    private(set) var lastError = ""

    mutating func admission(now: Double) -> Admission {
        switch state {
        case .healthy: return .all
        case .probing: return .none
        case .waiting(let until, let failFast):
            if now >= until {
                state = .probing
                return .probe
            }
            return failFast ? .failQueued : .none
        }
    }

    /// A transfer got an HTTP answer: the connection works.
    mutating func answered() {
        state = .healthy
        delay = 0
    }

    /// A transfer failed at the connection level; `probe` when it was the probing one. `jitter` is in
    /// 0...1 (the share of the back-off taken off).
    mutating func broken(probe: Bool, error: String, now: Double, jitter: Double) {
        switch state {
        case .healthy:
            delay = Self.firstDelay
            lastError = error
            state = .waiting(until: now + delay * (1 - jitter / 2), failFast: false)
        case .probing where probe:
            delay = min(Self.maxDelay, max(Self.firstDelay, delay * 2))
            lastError = error
            state = .waiting(until: now + delay * (1 - jitter / 2), failFast: true)
        case .probing, .waiting:
            // Transfers that were already on the broken connection: the same failure.
            break
        }
    }
}
