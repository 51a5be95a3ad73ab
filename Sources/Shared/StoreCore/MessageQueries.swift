import Core

/// The Remote API's message statements both backends run alike (the caller holds the
/// transaction or snapshot).
package enum MessageQueries {
    /// Creates `messages` of the application `appID` (their requests `encoded` as stored) and
    /// returns their codes. A message with a transaction id seen within `NewMessage.transactionWindow`
    /// is not created again: its code is the earlier message's. `activity` advances a Live
    /// Activity message's activity and returns the spec to store.
    package static func create<Connection: StatementRunner>(_ messages: [NewMessage], encoded: [String], appID: Int64, now: Int64,
                                                            _ connection: Connection,
                                                            activity: (NewMessage) throws -> MessageSpec) throws -> [String] {
        var codes: [String] = []
        for (message, request) in zip(messages, encoded) {
            var code = MessageIdentifiers.newCode()
            if let transactionID = message.transactionID {
                // The id's row is taken over once its window has passed; within it, it names the
                // message. A request committing the same id at once holds the row: this statement
                // waits for it (or for the database's one writer), then sees its row.
                let claimed = try connection.selectFirst(
                    """
                    INSERT INTO message_transactions (app_id, transaction_id, code, created_at) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (app_id, transaction_id) DO UPDATE SET code = excluded.code, created_at = excluded.created_at
                    WHERE message_transactions.created_at <= $4 - $5
                    RETURNING code
                    """, [.integer(appID), .text(transactionID), .text(code), .integer(now), .integer(NewMessage.transactionWindow)]) { $0.text(0) }
                if claimed == nil {
                    code = try connection.selectFirst("SELECT code FROM message_transactions WHERE app_id = $1 AND transaction_id = $2",
                                                      [.integer(appID), .text(transactionID)]) { $0.text(0) } ?? code
                    codes.append(code)
                    continue
                }
            }
            let sendAt = message.spec.schedule.earliestDueAt
            let stored = message.spec.liveActivity == nil ? request : try activity(message).storedText()
            try connection.execute(
                """
                INSERT INTO messages (code, app_id, transaction_id, status, request, send_at, created_at, updated_at, hash, send_rate,
                                      inbox_until, inbox_seconds)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11)
                """,
                [.text(code), .integer(appID), .optional(message.transactionID),
                 .text((sendAt <= now ? MessageState.queued : .scheduled).rawValue), .text(stored), .integer(sendAt), .integer(now),
                 .text(MessageIdentifiers.newHash()), .optional(message.spec.sendRate),
                 .optional(message.spec.inbox?.storedUntil), .optional(message.spec.inbox?.keptSeconds)])
            codes.append(code)
        }
        return codes
    }

    /// The status of the message `code` (nil when there is none, or when `appFilter` names
    /// another application's id): its row, its shards' counts and its errors. `appCode` names an
    /// application id; `reports` counts a message's devices that reported a kind (parameters `$1`
    /// message id, `$2` hash, `$3` kind, `$4` application id).
    package static func status<Connection: StatementRunner>(code: String, appFilter: Int64?, appCode: (Int64) -> String?,
                                                            reports: String, _ connection: Connection) throws -> MessageStatus? {
        guard let row = try connection.selectFirst(
            "SELECT id, app_id, status, hash, send_at, created_at, request FROM messages WHERE code = $1", [.text(code)], { row in
                (row.int(0), row.int(1), row.text(2), row.text(3), row.int(4), row.int(5), row.text(6))
            }) else { return nil }
        let (id, appID, status, hash, sendAt, createdAt, request) = row
        if let appFilter, appFilter != appID { return nil }
        var result = MessageStatus(code: code, app: appCode(appID) ?? "", status: MessageState(rawValue: status) ?? .failed,
                                   hash: hash, sendAt: sendAt, createdAt: createdAt, spec: try MessageSpec(storedText: request))
        if let sums = try connection.selectFirst(
            """
            SELECT coalesce(sum(targeted), 0), coalesce(sum(sent), 0), coalesce(sum(failed), 0), coalesce(sum(throttled), 0),
              coalesce(sum(retrying), 0), coalesce(sum(ambiguous), 0)
            FROM message_shards WHERE message_id = $1
            """, [.integer(id)], { row in (Int32(0)..<6).map { Int(row.int($0)) } }) {
            (result.targeted, result.sent, result.failed, result.throttled) = (sums[0], sums[1], sums[2], sums[3])
            (result.retrying, result.ambiguous) = (sums[4], sums[5])
        }
        for (reason, count) in try connection.select("SELECT reason, count FROM message_errors WHERE message_id = $1", [.integer(id)], {
            ($0.text(0), Int($0.int(1)))
        }) {
            result.errors[reason] = count
        }
        // Once per (message, device), and only from devices the message was sent to: SDK retries
        // and reports from elsewhere cannot push the rates past 100%.
        result.delivered = Int(try connection.selectFirst(reports, [.integer(id), .text(hash), .text("delivery"), .integer(appID)]) {
            $0.int(0)
        } ?? 0)
        result.opened = Int(try connection.selectFirst(reports, [.integer(id), .text(hash), .text("push_stat"), .integer(appID)]) {
            $0.int(0)
        } ?? 0)
        return result
    }

    /// The codes of the application's messages, newest first, `limit` of them after `offset`.
    package static func recentCodes<Connection: StatementRunner>(appID: Int64, limit: Int, offset: Int,
                                                                 _ connection: Connection) throws -> [String] {
        try connection.select("SELECT code FROM messages WHERE app_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3",
                              [.integer(appID), .integer(Int64(limit)), .integer(Int64(offset))]) { $0.text(0) }
    }

    package static func count<Connection: StatementRunner>(appID: Int64, _ connection: Connection) throws -> Int {
        Int(try connection.selectFirst("SELECT count(*) FROM messages WHERE app_id = $1", [.integer(appID)]) { $0.int(0) } ?? 0)
    }

    package static func totals<Connection: StatementRunner>(appID: Int64, since: Int64, _ connection: Connection) throws -> CampaignTotals {
        try connection.selectFirst(CampaignTotals.query, [.integer(appID), .integer(since)]) { CampaignTotals(row: $0) } ?? CampaignTotals()
    }

    /// Deletes a message not finished yet and cancels its pending shards; false when there is none.
    package static func delete<Connection: StatementRunner>(appID: Int64, code: String, now: Int64,
                                                            _ connection: Connection) throws -> Bool {
        guard let id = try connection.selectFirst(
            """
            UPDATE messages SET status = 'deleted', updated_at = $1
            WHERE app_id = $2 AND code = $3 AND status IN ('scheduled', 'queued', 'sending') RETURNING id
            """, [.integer(now), .integer(appID), .text(code)], { $0.int(0) }) else { return false }
        try connection.execute("UPDATE message_shards SET status = 'cancelled' WHERE message_id = $1 AND status = 'pending'", [.integer(id)])
        return true
    }

    /// The types of the application's tags.
    package static func tagTypes<Connection: StatementRunner>(appID: Int64, _ connection: Connection) throws -> [String: TagType] {
        var types: [String: TagType] = [:]
        for (name, raw) in try connection.select("SELECT name, type FROM tag_definitions WHERE app_id = $1", [.integer(appID)], {
            ($0.text(0), Int($0.int(1)))
        }) {
            types[name] = TagType(rawValue: raw)
        }
        return types
    }
}
