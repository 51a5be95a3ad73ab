import Foundation
import Core
import StoreCore

/// `CampaignStore` on the shared SQLite database.
public final class SQLiteCampaignStore: SQLCampaignStore {
    public let database: SQLiteDatabase

    public init(database: SQLiteDatabase) {
        self.database = database
    }

    /// The devices that reported a kind for a message (see `MessageQueries.status`): those workers
    /// matched into `message_reports`, and those of the reports they have not processed yet.
    public static let reportedDevices = """
        SELECT count(*) FROM (
          SELECT device_id FROM message_reports WHERE message_id = $1 AND kind = $3
          UNION
          SELECT d.id FROM reports r INDEXED BY reports_unprocessed
          JOIN devices d ON d.app_id = r.app_id AND d.hwid = r.hwid
          WHERE r.processed_at IS NULL AND r.hash = $2 AND r.kind = $3 AND r.app_id = $4) AS reported
        JOIN deliveries x ON x.message_id = $1 AND x.device_id = reported.device_id AND x.status = 'sent'
        """

    public func activateDueMessages(now: Int64, shardSize: Int) throws(StoreError) -> Int {
        try database.write { writer in
            let connection = writer.connection
            let due = try connection.prepare(
                "SELECT id, app_id, request FROM messages WHERE status IN ('scheduled', 'queued') AND send_at <= ? ORDER BY send_at LIMIT 100"
            ).rows([.integer(now)]) { ($0.int(0), $0.int(1), $0.text(2)) }
            let insert = try connection.prepare(
                """
                INSERT INTO message_shards (message_id, first_device, last_device, by_timezone, timezone_offset, due_at, status)
                VALUES (?, ?, ?, ?, ?, ?, 'pending')
                """)
            for (id, appID, request) in due {
                let spec = try MessageSpec(storedText: request)
                for shard in try ShardPlan.shards(of: spec, appID: appID, shardSize: shardSize, connection) {
                    try insert.run([.integer(id), .integer(shard.first), .integer(shard.last), .integer(shard.byTimezone ? 1 : 0),
                                    shard.timezoneOffset.map(SQLiteValue.integer) ?? .null, .integer(shard.dueAt)])
                }
                try connection.prepare("UPDATE messages SET status = 'sending', updated_at = ? WHERE id = ?").run([.integer(now), .integer(id)])
            }
            return due.count
        }
    }

    public func leaseShards(worker: String, count: Int, now: Int64, leaseUntil: Int64) throws(StoreError) -> [Int64] {
        guard count > 0 else { return [] }
        return try database.write { writer in
            let connection = writer.connection
            let candidates = try connection.prepare(
                """
                SELECT s.id, s.message_id, m.send_rate IS NOT NULL FROM message_shards s JOIN messages m ON m.id = s.message_id
                WHERE s.status = 'pending' AND s.due_at <= ?1 AND m.status = 'sending'
                  AND (m.send_rate IS NULL OR NOT EXISTS (
                    SELECT 1 FROM message_shards o WHERE o.message_id = s.message_id AND o.status = 'leased'))
                ORDER BY s.due_at, s.message_id, s.id LIMIT ?2
                """
            ).rows([.integer(now), .integer(Int64(count * 4))]) { ($0.int(0), $0.int(1), $0.int(2) != 0) }
            var leased: [Int64] = []
            var rateLimited: Set<Int64> = []
            let update = try connection.prepare(
                "UPDATE message_shards SET status = 'leased', lease_owner = ?, lease_until = ?, attempts = attempts + 1 WHERE id = ?")
            for (shard, message, limited) in candidates where leased.count < count {
                if limited {
                    guard rateLimited.insert(message).inserted else { continue }
                }
                try update.run([.text(worker), .integer(leaseUntil), .integer(shard)])
                leased.append(shard)
            }
            return leased
        }
    }

    public func releaseLeases(now: Int64, liveWorkers: Set<String>) throws(StoreError) -> Int {
        try database.write { writer in
            let connection = writer.connection
            let leased = try connection.prepare(
                "SELECT s.id, s.lease_owner, s.lease_until, m.status FROM message_shards s JOIN messages m ON m.id = s.message_id WHERE s.status = 'leased'"
            ).rows([]) { ($0.int(0), $0.text(1), $0.int(2), $0.text(3)) }
            var released = 0
            for (id, owner, until, messageStatus) in leased where until < now || !liveWorkers.contains(owner) {
                // A shard of a deleted message is cancelled rather than queued again.
                let state = messageStatus == MessageState.deleted.rawValue ? ShardState.cancelled : .pending
                try connection.prepare("UPDATE message_shards SET status = ?, lease_owner = NULL WHERE id = ?")
                    .run([.text(state.rawValue), .integer(id)])
                released += 1
            }
            return released
        }
    }

    public func queueDepth() throws(StoreError) -> QueueDepth {
        try database.read { connection in
            var messages: [String: Int] = [:], shards: [String: Int] = [:]
            for (status, count) in try connection.prepare(
                "SELECT status, count(*) FROM messages WHERE status IN ('scheduled', 'queued', 'sending') GROUP BY status"
            ).rows([], { ($0.text(0), Int($0.int(1))) }) { messages[status] = count }
            for (status, count) in try connection.prepare(
                "SELECT status, count(*) FROM message_shards WHERE status IN ('pending', 'leased') GROUP BY status"
            ).rows([], { ($0.text(0), Int($0.int(1))) }) { shards[status] = count }
            let retrying = try connection.prepare(
                "SELECT coalesce(sum(s.retrying), 0) FROM message_shards s JOIN messages m ON m.id = s.message_id WHERE m.status = 'sending'"
            ).first { Int($0.int(0)) } ?? 0
            return QueueDepth(messages: messages, shards: shards, retrying: retrying)
        }
    }
}
