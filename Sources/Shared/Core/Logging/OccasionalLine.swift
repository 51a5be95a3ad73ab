/// Keeps an event that anyone can repeat without bound (a peer's malformed or stale queue
/// messages, say) from flooding the log: the first is logged at once, then at most one line per
/// `interval`, carrying how many happened since the previous line. `note` returns what is due, so
/// the rule is tested without a clock or a log.
public struct OccasionalLine: Sendable {
    public let interval: Double
    private var lastLine = -Double.infinity
    private var unlogged = 0

    public init(interval: Double = 60) {
        self.interval = interval
    }

    /// Counts one event at `now` (monotonic seconds); returns how many events the line due now
    /// covers (this one and those not logged before it), or nil when no line is due.
    public mutating func note(now: Double) -> Int? {
        unlogged += 1
        guard now - lastLine >= interval else { return nil }
        lastLine = now
        defer { unlogged = 0 }
        return unlogged
    }
}
