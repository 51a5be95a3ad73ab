/// The message inbox: a copy of an inbox message per device from the moment its push is recorded
/// (the push's delivery row is the copy; only the SDK's status changes are stored beside it), read
/// and marked by the SDK's `getInboxMessages` and `inboxStatus`. A device with a user id sees the
/// messages of every device of that user, each message once.
public protocol InboxStore: Sendable {
    /// The device `hwid` of the application as an inbox reader, or nil when the app has no such device.
    func inboxOwner(app: String, hwid: String) throws(StoreError) -> InboxOwner?

    /// The owner's messages that have not expired at `now` and were not deleted, newest first,
    /// starting after `after` (an `order` of an earlier page), at most `limit` (0: all).
    func inbox(_ owner: InboxOwner, after: Int64?, limit: Int, now: Int64) throws(StoreError) -> InboxPage

    /// Raises the status of the owner's copies of a message (statuses only grow: read after opened
    /// stays opened); false when the owner has no unexpired copy of it, and nothing changed.
    func setInboxStatus(_ owner: InboxOwner, order: Int64, status: InboxStatus, now: Int64) throws(StoreError) -> Bool
}

/// Who reads an inbox: one device, and through its user id every device of that user.
public struct InboxOwner: Sendable, Equatable {
    public var appID: Int64
    public var deviceID: Int64
    public var userID: String?
    public var language: String?

    package init(appID: Int64, deviceID: Int64, userID: String?, language: String?) {
        self.appID = appID
        self.deviceID = deviceID
        self.userID = userID
        self.language = language
    }

    /// The owner from the row of a query selecting app id, device id, user id and language.
    package init(row: some StoredRow) {
        self.init(appID: row.int(0), deviceID: row.int(1), userID: row.optionalText(2), language: row.optionalText(3))
    }
}

/// The SDK's inbox status codes (`inboxStatus.status`, `messages[].status`).
public enum InboxStatus: Int, Sendable {
    case delivered = 1, read = 2, opened = 3, deleted = 4
}

/// One message in an inbox.
public struct InboxEntry: Sendable, Equatable {
    /// The message's row id: its place in the inbox (newer messages have larger ones) and the
    /// `inbox_code` the SDK sends back.
    public var order: Int64
    public var code: String
    /// The payload hash `p` of the message's pushes.
    public var hash: String
    public var spec: MessageSpec
    public var status: InboxStatus
    /// When the owner's first copy was sent, and when the last copy expires (unix seconds).
    public var sentAt: Int64
    public var expiresAt: Int64

    package init(order: Int64, code: String, hash: String, spec: MessageSpec, status: InboxStatus, sentAt: Int64, expiresAt: Int64) {
        self.order = order
        self.code = code
        self.hash = hash
        self.spec = spec
        self.status = status
        self.sentAt = sentAt
        self.expiresAt = expiresAt
    }

    /// The entry from the row both backends' inbox query selects: message id, highest status,
    /// first sent, last expiry, code, hash, stored request.
    package init(row: some StoredRow) throws {
        self.init(order: row.int(0), code: row.text(4), hash: row.text(5), spec: try MessageSpec(storedText: row.text(6)),
                  status: InboxStatus(rawValue: Int(row.int(1))) ?? .delivered, sentAt: row.int(2), expiresAt: row.int(3))
    }
}

/// A page of an inbox.
public struct InboxPage: Sendable, Equatable {
    public var entries: [InboxEntry]
    /// Whether older messages follow the last entry.
    public var hasMore: Bool
    /// The owner's unexpired messages still `delivered` (neither read, opened nor deleted).
    public var unread: Int

    package init(entries: [InboxEntry], hasMore: Bool, unread: Int) {
        self.entries = entries
        self.hasMore = hasMore
        self.unread = unread
    }

    /// A page of at most `limit` entries (0: no limit) from `rows`, read with one more than the
    /// limit so that a further row tells that older messages follow.
    package init(rows: [InboxEntry], limit: Int, unread: Int) {
        let hasMore = limit > 0 && rows.count > limit
        self.init(entries: hasMore ? Array(rows.prefix(limit)) : rows, hasMore: hasMore, unread: unread)
    }
}

/// The values of `messages.inbox_until`, the bound past which no copy of an inbox message is listed.
package enum InboxBounds {
    /// A message with `inbox_days` that may still send: its last copy's expiry is not known yet.
    package static let sending = Int64.max
    /// Once such a message is done or deleted, `pruneInbox` sets its bound to the time of that pass
    /// plus `inbox_days` plus this margin: a worker still holding a lease on a deleted message may
    /// record a last batch after the deletion.
    package static let settleMargin: Int64 = 3_600
}
