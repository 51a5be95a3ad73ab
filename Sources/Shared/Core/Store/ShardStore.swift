/// A worker's side of the shard lifecycle: it claims a leased shard, resolves its devices page by
/// page and records each batch of outcomes, keeping its lease alive. A store call that returns
/// false (or nil) tells the worker its lease is lost: it stops and leaves the shard to its next holder.
public protocol ShardStore: Sendable {
    /// Confirms the lease of `shard` for `worker`, extends it, and returns what to do; nil when the
    /// lease is no longer this worker's or the message was deleted. Retries that an earlier holder
    /// was sending when it vanished become ambiguous (their `ambiguous` count goes up by one).
    func claimShard(_ shard: Int64, worker: String, leaseUntil: Int64, now: Int64) throws(StoreError) -> ShardWork?

    /// Extends the lease of a shard the worker is still working on; false when it is no longer the worker's.
    func extendLease(shard: Int64, worker: String, leaseUntil: Int64) throws(StoreError) -> Bool

    /// Notes that the shard's devices up to `deviceID` are about to be handed to a provider, so that
    /// a later holder knows which devices without an outcome may have been sent. False when the lease
    /// is lost. (`record` notes it too, in the commit that records a batch.)
    func markAttempted(_ work: ShardWork, through deviceID: Int64, worker: String) throws(StoreError) -> Bool

    /// The next page of devices of the shard with an id above `after`, not yet recorded for the message.
    func targets(of work: ShardWork, after: Int64, limit: Int) throws(StoreError) -> [Target]

    /// The next page, as `targets`, with the frequency caps' counts of its devices: for each device
    /// with any, the pushes recorded as sent to it since each of the two moments, (since1, since2).
    func cappedTargets(of work: ShardWork, after: Int64, limit: Int, since1: Int64,
                       since2: Int64) throws(StoreError) -> (targets: [Target], recentSends: [Int64: (Int, Int)])

    /// Records a batch of first-attempt outcomes (idempotent per message and device; a `retrying`
    /// outcome also stores its retry) and extends the lease. With `attemptedThrough`, the same commit
    /// does what `markAttempted` does. Returns false when the worker must stop: the lease was lost or the
    /// message deleted.
    func record(_ outcomes: [DeliveryRecord], work: ShardWork, worker: String, leaseUntil: Int64, now: Int64,
                attemptedThrough: Int64?) throws(StoreError) -> Bool

    /// Returns one lease to the pool at once (the job could not be handed over, or the worker
    /// stops), so that the shard is leased again without waiting for the lease to run out.
    func releaseLease(shard: Int64, worker: String) throws(StoreError)

    /// Ends the worker's hold on the shard: `done` when every device was attempted (`resumeAt` nil) and
    /// no retry is left, else back to `pending`, due at `resumeAt` or the earliest retry. Returns that
    /// due time, or nil when the shard is done.
    func finishShard(_ work: ShardWork, worker: String, resumeAt: Int64?) throws(StoreError) -> Int64?
}

/// One shard as a worker processes it.
public struct ShardWork: Sendable {
    public var shardID: Int64
    public var messageID: Int64
    public var messageCode: String
    public var hash: String
    public var app: String
    public var appID: Int64
    public var spec: MessageSpec
    public var firstDevice: Int64
    public var lastDevice: Int64
    /// Restricts the shard to devices with this UTC offset (nil offset: devices without one).
    public var timezoneFilter: Int64??
    /// Times the shard was leased (1 the first time).
    public var attempts: Int
    /// The highest device id an earlier holder handed to a provider: devices up to it without an
    /// outcome may have been sent.
    public var attemptedThrough: Int64?

    package init(shardID: Int64, messageID: Int64, messageCode: String, hash: String, app: String, appID: Int64,
                 spec: MessageSpec, firstDevice: Int64, lastDevice: Int64, timezoneFilter: Int64??, attempts: Int,
                 attemptedThrough: Int64?) {
        self.shardID = shardID
        self.messageID = messageID
        self.messageCode = messageCode
        self.hash = hash
        self.app = app
        self.appID = appID
        self.spec = spec
        self.firstDevice = firstDevice
        self.lastDevice = lastDevice
        self.timezoneFilter = timezoneFilter
        self.attempts = attempts
        self.attemptedThrough = attemptedThrough
    }
}

/// A device a shard resolved to.
public struct Target: Sendable, Equatable {
    public var deviceID: Int64
    public var hwid: String
    public var platform: Int
    public var pushToken: String
    public var gateway: String?
    public var language: String?
    public var badge: Int64
    /// A browser's subscription keys (its push token is the endpoint); nil when none are stored.
    public var webKeys: WebPushKeys?

    package init(deviceID: Int64, hwid: String, platform: Int, pushToken: String, gateway: String?, language: String?,
                 badge: Int64, webKeys: WebPushKeys? = nil) {
        self.deviceID = deviceID
        self.hwid = hwid
        self.platform = platform
        self.pushToken = pushToken
        self.gateway = gateway
        self.language = language
        self.badge = badge
        self.webKeys = webKeys
    }
}

/// The outcome of one push.
public struct DeliveryRecord: Sendable, Equatable {
    public enum Outcome: String, Sendable {
        case sent, failed, throttled
        /// A transient failure (5xx, 429, connection trouble): the push is tried again.
        case retrying
    }

    public var deviceID: Int64
    public var outcome: Outcome
    public var reason: String?
    /// The push token the provider declared dead (APNs 410, BadDeviceToken…; FCM UNREGISTERED…):
    /// the device is not targeted again until it registers a token anew.
    public var deadToken: String?
    /// `retrying`: how long the provider asked to wait (`Retry-After`), in seconds.
    public var retryAfter: Double?
    /// `retrying`: the request may have reached the provider (the connection was lost after it was written).
    public var ambiguous: Bool
    /// `retrying`: when the next attempt is due and when the push expires (unix seconds); set by the
    /// worker's retry policy before the outcome is recorded.
    public var schedule: RetrySchedule?

    public init(deviceID: Int64, outcome: Outcome, reason: String? = nil, deadToken: String? = nil, retryAfter: Double? = nil,
                ambiguous: Bool = false, schedule: RetrySchedule? = nil) {
        self.deviceID = deviceID
        self.outcome = outcome
        self.reason = reason
        self.deadToken = deadToken
        self.retryAfter = retryAfter
        self.ambiguous = ambiguous
        self.schedule = schedule
    }
}

/// What one write adds to a shard's funnel counters and its message's error counts; each store
/// backend writes it in its own SQL.
public struct ShardTally: Sendable {
    public var targeted: Int64 = 0
    public var sent: Int64 = 0
    public var failed: Int64 = 0
    public var throttled: Int64 = 0
    public var retrying: Int64 = 0
    public var ambiguous: Int64 = 0
    /// Failure reason → count.
    public var errors: [String: Int64] = [:]

    public init() {}

    /// Counts one outcome (a failure also under its reason).
    public mutating func count(_ outcome: DeliveryRecord) {
        switch outcome.outcome {
        case .sent: sent += 1
        case .throttled: throttled += 1
        case .retrying: retrying += 1
        case .failed:
            failed += 1
            errors[outcome.reason ?? "Unknown", default: 0] += 1
        }
    }
}
