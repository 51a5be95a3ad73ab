/// The Remote API's messages: the outbox a campaign starts from, and the reads of what became of
/// each message. Every write is committed before the method returns; a method that throws has
/// changed nothing.
public protocol MessageStore: Sendable {
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

    /// The application's messages, newest first, `limit` of them after skipping `offset`, with their funnels.
    func recentMessages(app: String, limit: Int, offset: Int) throws(StoreError) -> [MessageStatus]

    /// How many messages the application has (any status).
    func messageCount(app: String) throws(StoreError) -> Int

    /// Cancels a message: no further pushes leave. False when it does not exist or was already done.
    func deleteMessage(app: String, code: String, now: Int64) throws(StoreError) -> Bool

    /// Tag types of an application, for validating conditions.
    func tagTypes(app: String) throws(StoreError) -> [String: TagType]
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
