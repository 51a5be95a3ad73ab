import Core

/// The message inbox on SQLite (migration 16): a device's copies are the delivery rows of its app's
/// inbox messages, only the SDK's status changes are rows (`inbox_statuses`).
extension SQLiteCampaignStore {
    public func inboxOwner(app: String, hwid: String) throws(StoreError) -> InboxOwner? {
        try database.read { connection in
            try connection.prepare(
                "SELECT d.app_id, d.id, d.user_id, d.language FROM devices d JOIN applications a ON a.id = d.app_id WHERE a.code = ? AND d.hwid = ?"
            ).first([.text(app), .text(hwid)], InboxOwner.init(row:))
        }
    }

    public func inbox(_ owner: InboxOwner, after: Int64?, limit: Int, now: Int64) throws(StoreError) -> InboxPage {
        try database.read { connection in
            let rows = try connection.prepare(
                """
                \(Self.ownedCopies)
                SELECT c.message_id, max(c.status), min(c.sent_at), max(c.expires_at), m.code, m.hash, m.request
                FROM copies c JOIN messages m ON m.id = c.message_id
                WHERE c.message_id < ?5
                GROUP BY c.message_id HAVING max(c.status) < 4 ORDER BY c.message_id DESC LIMIT ?6
                """
            ).rows(Self.ownerValues(owner, now: now) + [.integer(after ?? Int64.max), .integer(limit == 0 ? -1 : Int64(limit + 1))],
                   InboxEntry.init(row:))
            let unread = try connection.prepare(
                """
                \(Self.ownedCopies)
                SELECT count(*) FROM (SELECT max(status) AS status FROM copies GROUP BY message_id) WHERE status = 1
                """
            ).first(Self.ownerValues(owner, now: now)) { Int($0.int(0)) } ?? 0
            return InboxPage(rows: rows, limit: limit, unread: unread)
        }
    }

    public func setInboxStatus(_ owner: InboxOwner, order: Int64, status: InboxStatus, now: Int64) throws(StoreError) -> Bool {
        try database.write { writer in
            let connection = writer.connection
            try connection.prepare(
                """
                \(Self.ownedCopies)
                INSERT INTO inbox_statuses (message_id, device_id, status)
                SELECT message_id, device_id, ?6 FROM copies WHERE message_id = ?5
                ON CONFLICT (message_id, device_id) DO UPDATE SET status = max(status, excluded.status)
                """
            ).run(Self.ownerValues(owner, now: now) + [.integer(order), .integer(Int64(status.rawValue))])
            return connection.changes > 0
        }
    }

    public func pruneInbox(expiredAt now: Int64, limit: Int) throws(StoreError) -> Int {
        try database.write { writer in
            let connection = writer.connection
            try connection.prepare(
                """
                UPDATE messages INDEXED BY messages_by_inbox_expiry SET inbox_until = ?1 + inbox_seconds + ?2
                WHERE inbox_until = ?3 AND status IN ('done', 'deleted')
                """
            ).run([.integer(now), .integer(InboxBounds.settleMargin), .integer(InboxBounds.sending)])
            try connection.prepare(
                """
                DELETE FROM inbox_statuses WHERE (message_id, device_id) IN (
                  SELECT s.message_id, s.device_id FROM messages m INDEXED BY messages_by_inbox_expiry
                  JOIN inbox_statuses s ON s.message_id = m.id WHERE m.inbox_until <= ?1 LIMIT ?2)
                """
            ).run([.integer(now), .integer(Int64(limit))])
            let removed = connection.changes
            if removed < limit {
                try connection.prepare("UPDATE messages INDEXED BY messages_by_inbox_expiry SET inbox_until = NULL WHERE inbox_until <= ?")
                    .run([.integer(now)])
            }
            return removed
        }
    }

    /// `copies`: the owner's unexpired copies, one row per device and message (parameters 1–4: app
    /// id, device id, user id, now). A copy is the delivery row of an inbox message whose push was
    /// sent or held back by frequency capping (the inbox is not capped); a failed push has none,
    /// a retried one has its copy once a retry is sent. Its status is 1 unless the SDK raised it.
    static let ownedCopies = """
        WITH owned(device) AS (SELECT ?2 UNION SELECT id FROM devices WHERE ?3 IS NOT NULL AND app_id = ?1 AND user_id = ?3),
        copies AS (
          SELECT m.id AS message_id, d.device_id, d.created_at AS sent_at,
            coalesce(d.created_at + m.inbox_seconds, m.inbox_until) AS expires_at, coalesce(s.status, 1) AS status
          FROM messages m INDEXED BY messages_by_inbox CROSS JOIN owned o
          JOIN deliveries d ON d.message_id = m.id AND d.device_id = o.device
          LEFT JOIN inbox_statuses s ON s.message_id = m.id AND s.device_id = o.device
          WHERE m.app_id = ?1 AND m.inbox_until > ?4 AND d.status IN ('sent', 'throttled')
            AND coalesce(d.created_at + m.inbox_seconds, m.inbox_until) > ?4)
        """

    static func ownerValues(_ owner: InboxOwner, now: Int64) -> [SQLiteValue] {
        [.integer(owner.appID), .integer(owner.deviceID), owner.userID.map(SQLiteValue.text) ?? .null, .integer(now)]
    }
}
