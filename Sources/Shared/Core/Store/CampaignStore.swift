/// The message outbox and the shard lifecycle behind campaigns. Ingest creates messages and
/// dispatches shards; workers claim shards, resolve their devices page by page and record each
/// batch of outcomes. The store is the source of truth: a shard whose worker vanished is leased
/// again, and a push that failed for a transient reason waits in it for its next attempt (the
/// shard goes back to `pending`, due when the earliest retry is).
public protocol CampaignStore: InboxStore {
    // MARK: Ingest: the Remote API

    /// Commits the messages (one per notification) and returns their codes. A notification whose
    /// transaction id the app used less than `NewMessage.transactionWindow` seconds before `now`
    /// returns that message's code instead, and creates nothing, even while the first request is
    /// still being committed; after the window the id creates a new message.
    ///
    /// A Live Activity message advances its activity's row in the same transaction: its
    /// `aps.timestamp` becomes max(`now`, the activity's last + 1), and an end marks the activity
    /// ended (a start begins it anew). An update or end of an activity no device registered a token
    /// for, or that ended, fails with `LiveActivityRefusal.error` and stores none of the messages.
    func createMessages(app: String, _ messages: [NewMessage], now: Int64) throws(StoreError) -> [String]

    /// The entries of `devices` (hwids or push tokens) that match no device of the app.
    func unknownDevices(app: String, _ devices: [String]) throws(StoreError) -> [String]

    /// A message's status and funnel, or nil when the app has no message with that code.
    func messageStatus(app: String?, code: String) throws(StoreError) -> MessageStatus?

    /// A message's pushes sent (`send`, from its delivery rows) and its devices' first delivery and
    /// open reports (`delivery`, `open`), per minute.
    func messageActivity(code: String) throws(StoreError) -> [ActivityCount]

    /// The application's messages, newest first, `limit` of them after skipping `offset`, with their funnels.
    func recentMessages(app: String, limit: Int, offset: Int) throws(StoreError) -> [MessageStatus]

    /// How many messages the application has (any status).
    func messageCount(app: String) throws(StoreError) -> Int

    /// The funnels of the application's messages created at or after `since`, added up.
    func campaignTotals(app: String, since: Int64) throws(StoreError) -> CampaignTotals

    /// Cancels a message: no further pushes leave. False when it does not exist or was already done.
    func deleteMessage(app: String, code: String, now: Int64) throws(StoreError) -> Bool

    /// Tag types of an application, for validating conditions.
    func tagTypes(app: String) throws(StoreError) -> [String: TagType]

    // MARK: Ingest: the dispatcher

    /// Makes `ingest` the one dispatcher until `until` unless another ingest holds the role and its
    /// hold has not run out at `now`; true when `ingest` holds it. Several ingests on one database
    /// call this every second: one dispatches, the others stand by and take over when it stops renewing.
    func holdDispatcher(ingest: String, now: Int64, until: Int64) throws(StoreError) -> Bool

    /// Gives the role up at once (a graceful stop), so that a standby takes over without waiting.
    func releaseDispatcher(ingest: String) throws(StoreError)

    /// The ingest holding the dispatcher role at `now`, if any.
    func dispatcherHolder(now: Int64) throws(StoreError) -> String?

    /// Splits every message that has come due into shards of at most `shardSize` device ids (at
    /// least 16 shards while they hold 1,000 ids or more); returns how many messages started.
    func activateDueMessages(now: Int64, shardSize: Int) throws(StoreError) -> Int

    /// Leases up to `count` ready shards to `worker` until `leaseUntil`.
    func leaseShards(worker: String, count: Int, now: Int64, leaseUntil: Int64) throws(StoreError) -> [Int64]

    /// Shards leased per worker right now.
    func leasedShardCounts() throws(StoreError) -> [String: Int]

    /// Returns leases that expired, or that belong to workers not in `liveWorkers`, to the pool.
    func releaseLeases(now: Int64, liveWorkers: Set<String>) throws(StoreError) -> Int

    /// Returns one lease to the pool (the job could not be handed over).
    func releaseLease(shard: Int64, worker: String) throws(StoreError)

    /// Marks messages whose shards are all finished as done; returns how many.
    func completeMessages(now: Int64) throws(StoreError) -> Int

    /// Deletes up to `limit` delivery rows (and leftover retries) of messages that finished (done or
    /// deleted) before `before`; returns how many rows went. Funnel totals are kept elsewhere.
    func pruneDeliveries(finishedBefore before: Int64, limit: Int, now: Int64) throws(StoreError) -> Int
    /// Retention: deletes up to `limit` transaction ids whose window (`NewMessage.transactionWindow`)
    /// has passed at `now` (a reuse would create a new message anyway); returns how many went.
    func pruneMessageTransactions(expiredAt now: Int64, limit: Int) throws(StoreError) -> Int

    /// Messages and shards by status, and pushes of unfinished messages waiting for a retry (the
    /// queue depth on `/metrics`).
    func queueDepth() throws(StoreError) -> QueueDepth

    // MARK: Workers

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

    /// Ends the worker's hold on the shard: `done` when every device was attempted (`resumeAt` nil) and
    /// no retry is left, else back to `pending`, due at `resumeAt` or the earliest retry. Returns that
    /// due time, or nil when the shard is done.
    func finishShard(_ work: ShardWork, worker: String, resumeAt: Int64?) throws(StoreError) -> Int64?
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

/// What waits in the campaign pipeline.
public struct QueueDepth: Sendable {
    /// Unfinished messages by status.
    public var messages: [String: Int]
    /// Pending and leased shards.
    public var shards: [String: Int]
    /// Pushes waiting for a retry.
    public var retrying: Int

    public init(messages: [String: Int], shards: [String: Int], retrying: Int) {
        self.messages = messages
        self.shards = shards
        self.retrying = retrying
    }
}

/// A notification ready to be stored.
public struct NewMessage: Sendable {
    /// How long a transaction id returns the message it created (seconds): a day, as Pushwoosh does.
    public static let transactionWindow: Int64 = 86_400

    public var spec: MessageSpec
    public var transactionID: String?
    /// Where the request gave the notification (`notifications[2]`), for errors about stored state.
    public var path: String?

    public init(spec: MessageSpec, transactionID: String?, path: String? = nil) {
        self.spec = spec
        self.transactionID = transactionID
        self.path = path
    }
}

/// The funnel of one message, as `GET /api/v1/messages/<code>` serves it (docs/openapi.yaml).
public struct MessageStatus: Sendable, Equatable {
    public var code: String
    public var app: String
    public var status: MessageState
    public var hash: String
    public var sendAt: Int64
    public var createdAt: Int64
    public var spec: MessageSpec
    public var targeted = 0
    public var sent = 0
    public var failed = 0
    public var throttled = 0
    /// Pushes that failed for a transient reason and wait for their next attempt.
    public var retrying = 0
    /// Pushes whose outcome was unknown once (connection lost after the request was written, or
    /// the worker vanished while sending): each was sent again at most once, so this bounds duplicates.
    public var ambiguous = 0
    public var delivered = 0
    public var opened = 0
    public var errors: [String: Int] = [:]

    package init(code: String, app: String, status: MessageState, hash: String, sendAt: Int64, createdAt: Int64,
                 spec: MessageSpec, targeted: Int = 0, sent: Int = 0, failed: Int = 0, throttled: Int = 0, retrying: Int = 0,
                 ambiguous: Int = 0, delivered: Int = 0, opened: Int = 0, errors: [String: Int] = [:]) {
        self.code = code
        self.app = app
        self.status = status
        self.hash = hash
        self.sendAt = sendAt
        self.createdAt = createdAt
        self.spec = spec
        self.targeted = targeted
        self.sent = sent
        self.failed = failed
        self.throttled = throttled
        self.retrying = retrying
        self.ambiguous = ambiguous
        self.delivered = delivered
        self.opened = opened
        self.errors = errors
    }
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

/// When a retried push is due again and when it gives up (unix seconds).
public struct RetrySchedule: Sendable, Equatable {
    public var nextAt: Int64
    public var expiresAt: Int64

    public init(nextAt: Int64, expiresAt: Int64) {
        self.nextAt = nextAt
        self.expiresAt = expiresAt
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
