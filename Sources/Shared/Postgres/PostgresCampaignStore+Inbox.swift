import Core

/// The message inbox on PostgreSQL (migration 12), as on SQLite: a device's copies are the delivery
/// rows of its app's inbox messages, only the SDK's status changes are rows (`inbox_statuses`).
extension PostgresCampaignStore {
    public func inboxOwner(app: String, hwid: String) throws(StoreError) -> InboxOwner? {
        try database.read { connection in
            try connection.first(
                "SELECT d.app_id, d.id, d.user_id, d.language FROM devices d JOIN applications a ON a.id = d.app_id WHERE a.code = $1 AND d.hwid = $2",
                [.text(app), .text(hwid)], InboxOwner.init(row:))
        }
    }

    public func inbox(_ owner: InboxOwner, after: Int64?, limit: Int, now: Int64) throws(StoreError) -> InboxPage {
        try database.snapshot { connection in
            let rows = try connection.rows(
                """
                \(Self.ownedCopies)
                SELECT c.message_id, max(c.status), min(c.sent_at), max(c.expires_at), m.code, m.hash, m.request
                FROM copies c JOIN messages m ON m.id = c.message_id
                WHERE c.message_id < $5::bigint
                GROUP BY c.message_id, m.code, m.hash, m.request HAVING max(c.status) < 4 ORDER BY c.message_id DESC LIMIT $6::bigint
                """,
                Self.ownerValues(owner, now: now) + [.integer(after ?? Int64.max), limit == 0 ? .null : .integer(Int64(limit + 1))],
                InboxEntry.init(row:))
            let unread = try connection.first(
                """
                \(Self.ownedCopies)
                SELECT count(*) FROM (SELECT max(status) AS status FROM copies GROUP BY message_id) AS owned WHERE status = 1
                """, Self.ownerValues(owner, now: now)) { Int($0.int(0)) } ?? 0
            return InboxPage(rows: rows, limit: limit, unread: unread)
        }
    }

    public func setInboxStatus(_ owner: InboxOwner, order: Int64, status: InboxStatus, now: Int64) throws(StoreError) -> Bool {
        try database.write { transaction in
            try transaction.connection.run(
                """
                \(Self.ownedCopies)
                INSERT INTO inbox_statuses (message_id, device_id, status)
                SELECT message_id, device_id, $6::integer FROM copies WHERE message_id = $5::bigint
                ON CONFLICT (message_id, device_id) DO UPDATE SET status = greatest(inbox_statuses.status, excluded.status)
                """, Self.ownerValues(owner, now: now) + [.integer(order), .integer(Int64(status.rawValue))]) > 0
        }
    }

    public func pruneInbox(expiredAt now: Int64, limit: Int) throws(StoreError) -> Int {
        try database.write { transaction in
            let connection = transaction.connection
            try connection.run(
                "UPDATE messages SET inbox_until = $1 + inbox_seconds + $2 WHERE inbox_until = $3 AND status IN ('done', 'deleted')",
                [.integer(now), .integer(InboxBounds.settleMargin), .integer(InboxBounds.sending)])
            let removed = try connection.run(
                """
                DELETE FROM inbox_statuses WHERE (message_id, device_id) IN (
                  SELECT s.message_id, s.device_id FROM messages m JOIN inbox_statuses s ON s.message_id = m.id
                  WHERE m.inbox_until <= $1 LIMIT $2)
                """, [.integer(now), .integer(Int64(limit))])
            if removed < limit {
                try connection.run("UPDATE messages SET inbox_until = NULL WHERE inbox_until <= $1", [.integer(now)])
            }
            return removed
        }
    }

    /// `copies`: the owner's unexpired copies, one row per device and message (parameters 1–4: app
    /// id, device id, user id, now), as `SQLiteCampaignStore.ownedCopies` says.
    static let ownedCopies = """
        WITH owned(device) AS (
          SELECT $2::bigint UNION SELECT id FROM devices WHERE $3::text IS NOT NULL AND app_id = $1::bigint AND user_id = $3::text),
        copies AS (
          SELECT m.id AS message_id, d.device_id, d.created_at AS sent_at,
            coalesce(d.created_at + m.inbox_seconds, m.inbox_until) AS expires_at, coalesce(s.status, 1) AS status
          FROM messages m CROSS JOIN owned o
          JOIN deliveries d ON d.message_id = m.id AND d.device_id = o.device
          LEFT JOIN inbox_statuses s ON s.message_id = m.id AND s.device_id = o.device
          WHERE m.app_id = $1::bigint AND m.inbox_until > $4::bigint AND d.status IN ('sent', 'throttled')
            AND coalesce(d.created_at + m.inbox_seconds, m.inbox_until) > $4::bigint)
        """

    static func ownerValues(_ owner: InboxOwner, now: Int64) -> [PostgresValue] {
        [.integer(owner.appID), .integer(owner.deviceID), .optional(owner.userID), .integer(now)]
    }
}
