/// Keeps a loop that retries a failing step (while the database is down, say) from logging every
/// attempt: the first failure of a spell is logged at ERROR with its reason, then at most one
/// reminder per `reminderInterval` with the count so far, and one INFO line when a step succeeds
/// again. `noteFailure` and `noteSuccess` return what is due, so the rule is tested without a clock
/// or a log; `failed` and `succeeded` write it. Owned by the loop's thread.
public struct FailureSpell: Sendable {
    /// What a failure or a success calls for.
    public enum Line: Equatable, Sendable {
        /// The first failure of a spell.
        case began
        /// A reminder: the spell goes on, `failures` so far over `seconds`.
        case persists(failures: Int, seconds: Double)
        /// A step succeeded after `failures` failures over `seconds`.
        case ended(failures: Int, seconds: Double)
    }

    /// What steps, as the lines name it: "dispatcher" logs "dispatcher step failed" and
    /// "dispatcher recovered after 12.5 s".
    public let subject: String
    /// Pairs every line carries (such as the shard a lease keeper keeps).
    public let context: [(key: String, value: String)]
    public let reminderInterval: Double
    /// When the spell began; nil while steps succeed.
    private var start: Double?
    private var failures = 0
    private var lastLine = 0.0

    public init(subject: String, context: [(key: String, value: String)] = [], reminderInterval: Double = 60) {
        self.subject = subject
        self.context = context
        self.reminderInterval = reminderInterval
    }

    /// Counts a failure at `now`; returns the line due, if any.
    public mutating func noteFailure(now: Double) -> Line? {
        failures += 1
        guard let start else {
            start = now
            lastLine = now
            return .began
        }
        guard now - lastLine >= reminderInterval else { return nil }
        lastLine = now
        return .persists(failures: failures, seconds: now - start)
    }

    /// Counts a success at `now`; returns the line that ends a spell, if one was going on.
    public mutating func noteSuccess(now: Double) -> Line? {
        guard let start else { return nil }
        defer {
            self.start = nil
            failures = 0
        }
        return .ended(failures: failures, seconds: now - start)
    }

    /// Counts a failure and logs it if due.
    public mutating func failed(_ error: any Error, now: Double = monotonicSeconds(), logger: Logger) {
        switch noteFailure(now: now) {
        case .began:
            logger.log(.error, "\(subject) step failed; retrying, further failures are logged once a minute",
                       context + [("error", "\(error)")])
        case .persists(let failures, let seconds):
            logger.log(.error, "\(subject) step still failing",
                       context + [("failures", String(failures)), ("down_seconds", Self.tenths(seconds)), ("error", "\(error)")])
        case .ended, nil:
            break
        }
    }

    /// Counts a success and logs the recovery if a spell ends.
    public mutating func succeeded(now: Double = monotonicSeconds(), logger: Logger) {
        guard case .ended(let failures, let seconds) = noteSuccess(now: now) else { return }
        logger.log(.info, "\(subject) recovered after \(Self.tenths(seconds)) s", context + [("failures", String(failures))])
    }

    /// Seconds to a tenth: "12.5".
    static func tenths(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
