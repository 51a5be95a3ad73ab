import Core

/// The message inbox on SQLite (`inbox_entries`, migration 11).
extension SQLiteCampaignStore {
    public func inboxOwner(app: String, hwid: String) throws(StoreError) -> InboxOwner? {
        try database.read { connection in
            try connection.prepare(
                "SELECT d.app_id, d.id, d.user_id, d.language FROM devices d JOIN applications a ON a.id = d.app_id WHERE a.code = ? AND d.hwid = ?"
            ).first([.text(app), .text(hwid)]) {
                InboxOwner(appID: $0.int(0), deviceID: $0.int(1), userID: $0.optionalText(2), language: $0.optionalText(3))
            }
        }
    }

    public func inbox(_ owner: InboxOwner, after: Int64?, limit: Int, now: Int64) throws(StoreError) -> InboxPage {
        try database.read { connection in
            let rows = try connection.prepare(
                """
                SELECT e.message_id, max(e.status), min(e.sent_at), max(e.expires_at), m.code, m.hash, m.request
                FROM inbox_entries e JOIN messages m ON m.id = e.message_id
                WHERE e.device_id IN (\(Self.ownedDevices)) AND e.expires_at > ?4 AND e.message_id < ?5
                GROUP BY e.message_id HAVING max(e.status) < 4 ORDER BY e.message_id DESC LIMIT ?6
                """
            ).rows(Self.ownerValues(owner) + [.integer(now), .integer(after ?? Int64.max), .integer(limit == 0 ? -1 : Int64(limit + 1))]) { row in
                InboxEntry(order: row.int(0), code: row.text(4), hash: row.text(5), spec: try MessageSpec(storedText: row.text(6)),
                           status: InboxStatus(rawValue: Int(row.int(1))) ?? .delivered, sentAt: row.int(2), expiresAt: row.int(3))
            }
            let unread = try connection.prepare(
                """
                SELECT count(*) FROM (SELECT max(status) AS status FROM inbox_entries
                  WHERE device_id IN (\(Self.ownedDevices)) AND expires_at > ?4 GROUP BY message_id) WHERE status = 1
                """
            ).first(Self.ownerValues(owner) + [.integer(now)]) { Int($0.int(0)) } ?? 0
            let hasMore = limit > 0 && rows.count > limit
            return InboxPage(entries: hasMore ? Array(rows.prefix(limit)) : rows, hasMore: hasMore, unread: unread)
        }
    }

    public func setInboxStatus(_ owner: InboxOwner, order: Int64, status: InboxStatus, now: Int64) throws(StoreError) -> Bool {
        try database.write { writer in
            let connection = writer.connection
            try connection.prepare(
                """
                UPDATE inbox_entries SET status = max(status, ?5)
                WHERE message_id = ?4 AND device_id IN (\(Self.ownedDevices)) AND expires_at > ?6
                """
            ).run(Self.ownerValues(owner) + [.integer(order), .integer(Int64(status.rawValue)), .integer(now)])
            return connection.changes > 0
        }
    }

    public func pruneInbox(expiredAt now: Int64, limit: Int) throws(StoreError) -> Int {
        try database.write { writer in
            let connection = writer.connection
            try connection.prepare(
                """
                DELETE FROM inbox_entries WHERE (device_id, message_id) IN
                  (SELECT device_id, message_id FROM inbox_entries INDEXED BY inbox_entries_by_expiry WHERE expires_at <= ? LIMIT ?)
                """
            ).run([.integer(now), .integer(Int64(limit))])
            return connection.changes
        }
    }

    /// The devices whose copies an owner reads (parameters 1–3: app id, device id, user id).
    static let ownedDevices = "SELECT ?2 UNION SELECT id FROM devices WHERE ?3 IS NOT NULL AND app_id = ?1 AND user_id = ?3"

    static func ownerValues(_ owner: InboxOwner) -> [SQLiteValue] {
        [.integer(owner.appID), .integer(owner.deviceID), owner.userID.map(SQLiteValue.text) ?? .null]
    }

    /// Keeps a copy of an inbox message for each device in `devices` (one statement for the batch),
    /// inside the transaction that records their pushes. Nothing when the message has no inbox
    /// options or has already expired.
    static func keepInInbox(_ devices: [Int64], work: ShardWork, now: Int64, _ connection: SQLiteConnection) throws {
        guard let inbox = work.spec.inbox, !devices.isEmpty else { return }
        let expiry = inbox.expiry(sentAt: now)
        guard expiry > now else { return }
        try connection.prepare(
            """
            INSERT OR IGNORE INTO inbox_entries (device_id, message_id, status, sent_at, expires_at)
            SELECT value, ?1, 1, ?2, ?3 FROM json_each(?4)
            """
        ).run([.integer(work.messageID), .integer(now), .integer(expiry), .text(JSON.array(devices.map { JSON.int($0) }).text)])
    }
}
