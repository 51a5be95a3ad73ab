/// Pushes that failed for a transient reason and wait in their shard for their next attempt (the
/// shard goes back to `pending`, due when the earliest retry is).
public protocol RetryStore: Sendable {
    /// Up to `limit` retries of the shard due at `now`, earliest first, with the device's current token.
    func dueRetries(of work: ShardWork, now: Int64, limit: Int) throws(StoreError) -> [PendingRetry]

    /// When the shard's earliest retry is due, if it has any.
    func nextRetry(of work: ShardWork) throws(StoreError) -> Int64?

    /// Marks retries as being sent (a later holder treats them as ambiguous if this worker vanishes). False when the lease is lost.
    func claimRetries(_ deviceIDs: [Int64], work: ShardWork, worker: String) throws(StoreError) -> Bool

    /// Records the outcomes of retried pushes: `sent` and `failed` end the retry, `retrying` schedules
    /// the next attempt. Returns false when the worker must stop.
    func recordRetries(_ outcomes: [DeliveryRecord], work: ShardWork, worker: String, leaseUntil: Int64,
                       now: Int64) throws(StoreError) -> Bool
}

/// A push waiting for another attempt.
public struct PendingRetry: Sendable, Equatable {
    /// The device with its current token; nil when it can no longer be sent to (unregistered, token
    /// dropped or declared dead, unsubscribed).
    public var target: Target?
    public var deviceID: Int64
    /// Attempts made so far.
    public var attempts: Int
    /// How many of them ended without knowing whether the provider got the push.
    public var ambiguous: Int
    public var expiresAt: Int64
    public var reason: String

    package init(target: Target?, deviceID: Int64, attempts: Int, ambiguous: Int, expiresAt: Int64, reason: String) {
        self.target = target
        self.deviceID = deviceID
        self.attempts = attempts
        self.ambiguous = ambiguous
        self.expiresAt = expiresAt
        self.reason = reason
    }
}

/// When a retried push is due again and when it gives up (unix seconds).
public struct RetrySchedule: Sendable, Equatable {
    public var nextAt: Int64
    public var expiresAt: Int64

    public init(nextAt: Int64, expiresAt: Int64) {
        self.nextAt = nextAt
        self.expiresAt = expiresAt
    }
}
