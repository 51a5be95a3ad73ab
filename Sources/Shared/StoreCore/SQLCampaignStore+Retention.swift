import Core

/// Retention of the campaign pipeline's rows on a SQL backend: each call is one write transaction
/// that deletes a bounded batch.
extension SQLCampaignStore {
    public func pruneDeliveries(finishedBefore before: Int64, limit: Int, now: Int64) throws(StoreError) -> Int {
        try database.writing { connection in
            var removed = 0
            // One message at a time, oldest first; its rows are one range of the primary key. The
            // rows of a message whose inbox is not over are its copies: they stay until it is.
            while removed < limit, let message = try connection.selectFirst(
                """
                SELECT id FROM messages WHERE pruned_at IS NULL AND status IN ('done', 'deleted') AND updated_at < $1
                  AND (inbox_until IS NULL OR inbox_until <= $2) ORDER BY id LIMIT 1
                """, [.integer(before), .integer(now)], { $0.int(0) }) {
                removed += try connection.execute(
                    "DELETE FROM deliveries WHERE message_id = $1 AND device_id IN (SELECT device_id FROM deliveries WHERE message_id = $1 LIMIT $2)",
                    [.integer(message), .integer(Int64(limit - removed))])
                guard removed < limit else { break }
                try connection.execute("DELETE FROM delivery_retries WHERE message_id = $1", [.integer(message)])
                try connection.execute("UPDATE messages SET pruned_at = $1 WHERE id = $2", [.integer(now), .integer(message)])
            }
            return removed
        }
    }

    public func pruneMessageTransactions(expiredAt now: Int64, limit: Int) throws(StoreError) -> Int {
        try database.writing { connection in
            // The outer age check is evaluated again on a row another request took over meanwhile
            // (PostgreSQL rechecks a locked row's conditions), so a renewed id is never deleted.
            try connection.execute(
                """
                DELETE FROM message_transactions WHERE created_at <= $1 AND (app_id, transaction_id) IN
                  (SELECT app_id, transaction_id FROM message_transactions WHERE created_at <= $1 ORDER BY created_at LIMIT $2)
                """, [.integer(now - NewMessage.transactionWindow), .integer(Int64(limit))])
        }
    }

    public func pruneInbox(expiredAt now: Int64, limit: Int) throws(StoreError) -> Int {
        try database.writing { connection in
            let byExpiry = connection.indexedBy("messages_by_inbox_expiry")
            try connection.execute(
                "UPDATE messages\(byExpiry) SET inbox_until = $1 + inbox_seconds + $2 WHERE inbox_until = $3 AND status IN ('done', 'deleted')",
                [.integer(now), .integer(InboxBounds.settleMargin), .integer(InboxBounds.sending)])
            let removed = try connection.execute(
                """
                DELETE FROM inbox_statuses WHERE (message_id, device_id) IN (
                  SELECT s.message_id, s.device_id FROM messages m\(byExpiry) JOIN inbox_statuses s ON s.message_id = m.id
                  WHERE m.inbox_until <= $1 LIMIT $2)
                """, [.integer(now), .integer(Int64(limit))])
            if removed < limit {
                try connection.execute("UPDATE messages\(byExpiry) SET inbox_until = NULL WHERE inbox_until <= $1", [.integer(now)])
            }
            return removed
        }
    }
}
