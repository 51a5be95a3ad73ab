import Foundation
import Core
import StoreCore

/// `CampaignStore` on the shared SQLite database.
public final class SQLiteCampaignStore: SQLCampaignStore {
    public let database: SQLiteDatabase

    public init(database: SQLiteDatabase) {
        self.database = database
    }

    // MARK: - Remote API

    public func unknownDevices(app: String, _ devices: [String]) throws(StoreError) -> [String] {
        guard !devices.isEmpty else { return [] }
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.prepare(
                """
                SELECT entry.value FROM json_each(?2) AS entry
                WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.app_id = ?1 AND d.hwid = entry.value)
                  AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.app_id = ?1 AND d.push_token IS NOT NULL
                                  AND substr(d.push_token, 1, 16) = substr(entry.value, 1, 16) AND d.push_token = entry.value)
                ORDER BY entry.key
                """
            ).rows([.integer(appID), .text(JSON.array(devices.map(JSON.string)).text)]) { $0.text(0) }
        }
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

    /// The smallest shard a campaign is cut into (device ids).
    static let minimumShard: Int64 = 1_000

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
                let bounds = try connection.prepare("SELECT min(id), max(id) FROM devices WHERE app_id = ?")
                    .first([.integer(appID)]) { row in row.optionalInt(0).flatMap { low in row.optionalInt(1).map { (low, $0) } } } ?? nil
                if let (low, high) = bounds {
                    let explicit = spec.users != nil || spec.devices != nil
                    // A small campaign is still cut into several shards, so that several workers share it.
                    let span = high - low + 1
                    let step = explicit ? span : min(Int64(shardSize), max(Self.minimumShard, (span + 15) / 16))
                    var groups: [(Int64, SQLiteValue, Int64)] = [(0, .null, spec.schedule.sendAt)]
                    if spec.schedule.perDeviceTimezone {
                        groups = try connection.prepare("SELECT DISTINCT timezone_offset FROM devices WHERE app_id = ?")
                            .rows([.integer(appID)]) { row in
                                let offset = row.optionalInt(0)
                                return (1, offset.map(SQLiteValue.integer) ?? .null, spec.schedule.dueAt(timezoneOffset: offset))
                            }
                    }
                    for (byTimezone, offset, dueAt) in groups {
                        var first = low
                        while first <= high {
                            let last = min(high, first + step - 1)
                            try insert.run([.integer(id), .integer(first), .integer(last), .integer(byTimezone), offset, .integer(dueAt)])
                            first = last + 1
                        }
                    }
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

    public func leasedShardCounts() throws(StoreError) -> [String: Int] {
        try database.read { connection in
            var counts: [String: Int] = [:]
            for (owner, count) in try connection.prepare(
                "SELECT lease_owner, count(*) FROM message_shards WHERE status = 'leased' GROUP BY lease_owner"
            ).rows([], { ($0.text(0), Int($0.int(1))) }) {
                counts[owner] = count
            }
            return counts
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

    public func releaseLease(shard: Int64, worker: String) throws(StoreError) {
        try database.write { writer in
            try writer.connection.prepare(
                "UPDATE message_shards SET status = 'pending', lease_owner = NULL WHERE id = ? AND lease_owner = ? AND status = 'leased'"
            ).run([.integer(shard), .text(worker)])
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
