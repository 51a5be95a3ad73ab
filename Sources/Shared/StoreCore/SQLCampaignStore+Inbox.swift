import Core

/// The message inbox on a SQL backend: a device's copies are the delivery rows of its app's inbox
/// messages, and only the SDK's status changes are rows (`inbox_statuses`).
extension SQLCampaignStore {
    public func inboxOwner(app: String, hwid: String) throws(StoreError) -> InboxOwner? {
        try database.reading { connection in
            try connection.selectFirst(
                "SELECT d.app_id, d.id, d.user_id, d.language FROM devices d JOIN applications a ON a.id = d.app_id WHERE a.code = $1 AND d.hwid = $2",
                [.text(app), .text(hwid)], InboxOwner.init(row:))
        }
    }

    public func inbox(_ owner: InboxOwner, after: Int64?, limit: Int, now: Int64) throws(StoreError) -> InboxPage {
        try database.readingSnapshot { connection in
            let rows = try connection.select(
                """
                \(Self.ownedCopies(connection))
                SELECT c.message_id, max(c.status), min(c.sent_at), max(c.expires_at), m.code, m.hash, m.request
                FROM copies c JOIN messages m ON m.id = c.message_id
                WHERE c.message_id < CAST($5 AS bigint)
                GROUP BY c.message_id, m.code, m.hash, m.request HAVING max(c.status) < 4 ORDER BY c.message_id DESC
                LIMIT CAST($6 AS bigint)
                """,
                Self.ownerValues(owner, now: now) + [.integer(after ?? Int64.max), .integer(limit == 0 ? Int64.max : Int64(limit + 1))],
                InboxEntry.init(row:))
            let unread = try connection.selectFirst(
                """
                \(Self.ownedCopies(connection))
                SELECT count(*) FROM (SELECT max(status) AS status FROM copies GROUP BY message_id) AS owned WHERE status = 1
                """, Self.ownerValues(owner, now: now)) { Int($0.int(0)) } ?? 0
            return InboxPage(rows: rows, limit: limit, unread: unread)
        }
    }

    public func setInboxStatus(_ owner: InboxOwner, order: Int64, status: InboxStatus, now: Int64) throws(StoreError) -> Bool {
        try database.writing { connection in
            try connection.execute(
                """
                \(Self.ownedCopies(connection))
                INSERT INTO inbox_statuses (message_id, device_id, status)
                SELECT message_id, device_id, CAST($6 AS integer) FROM copies WHERE message_id = CAST($5 AS bigint)
                ON CONFLICT (message_id, device_id) DO UPDATE SET status = \(connection.greatest)(inbox_statuses.status, excluded.status)
                """, Self.ownerValues(owner, now: now) + [.integer(order), .integer(Int64(status.rawValue))]) > 0
        }
    }

    /// `copies`: the owner's unexpired copies, one row per device and message (parameters 1–4: app
    /// id, device id, user id, now). A copy is the delivery row of an inbox message whose push was
    /// sent or held back by frequency capping (the inbox is not capped); a failed push has none,
    /// a retried one has its copy once a retry is sent. Its status is 1 unless the SDK raised it.
    static func ownedCopies(_ connection: Database.Connection) -> String {
        """
        WITH owned(device) AS (
          SELECT CAST($2 AS bigint) UNION SELECT id FROM devices WHERE CAST($3 AS text) IS NOT NULL AND app_id = $1 AND user_id = $3),
        copies AS (
          SELECT m.id AS message_id, d.device_id, d.created_at AS sent_at,
            coalesce(d.created_at + m.inbox_seconds, m.inbox_until) AS expires_at, coalesce(s.status, 1) AS status
          FROM messages m\(connection.indexedBy("messages_by_inbox")) CROSS JOIN owned o
          JOIN deliveries d ON d.message_id = m.id AND d.device_id = o.device
          LEFT JOIN inbox_statuses s ON s.message_id = m.id AND s.device_id = o.device
          WHERE m.app_id = $1 AND m.inbox_until > $4 AND d.status IN ('sent', 'throttled')
            AND coalesce(d.created_at + m.inbox_seconds, m.inbox_until) > $4)
        """
    }

    static func ownerValues(_ owner: InboxOwner, now: Int64) -> [Database.Connection.Value] {
        [.integer(owner.appID), .integer(owner.deviceID), .optional(owner.userID), .integer(now)]
    }
}
