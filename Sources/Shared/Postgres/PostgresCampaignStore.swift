import Foundation
import Core
import StoreCore

/// `CampaignStore` on PostgreSQL, with the SQLite backend's semantics. Where processes compete
/// for the same rows (several ingest processes activating messages or handing out shards, workers
/// and the lease sweeper on one shard), the rows are taken with `FOR UPDATE` / `SKIP LOCKED`, so
/// that each is handled by one of them at a time.
public final class PostgresCampaignStore: SQLCampaignStore {
    public let database: PostgresDatabase
    /// Each message's page window, by message id (`page(of:after:limit:sentSince:_:deviceID:)`).
    let pageWindows = Lock<[Int64: PageWindow]>([:])

    public init(database: PostgresDatabase) {
        self.database = database
    }

    /// The devices that reported a kind for a message (see `MessageQueries.status`): those workers
    /// matched into `message_reports`, and those of the reports they have not processed yet. Each
    /// reported device is looked up in the deliveries on their key (`OFFSET 0` keeps that lookup
    /// from becoming a join), so the cost follows the reports: the deliveries grow from nothing
    /// during a campaign, faster than the planner's statistics follow.
    public static let reportedDevices = """
        SELECT count(*) FROM (
          SELECT device_id FROM message_reports WHERE message_id = $1 AND kind = $3
          UNION
          SELECT d.id FROM reports r JOIN devices d ON d.app_id = r.app_id AND d.hwid = r.hwid
          WHERE r.processed_at IS NULL AND r.hash = $2 AND r.kind = $3 AND r.app_id = $4) AS reported
        WHERE EXISTS (SELECT 1 FROM deliveries x WHERE x.message_id = $1 AND x.device_id = reported.device_id
          AND x.status = 'sent' OFFSET 0)
        """

    public func activateDueMessages(now: Int64, shardSize: Int) throws(StoreError) -> Int {
        try database.write { transaction in
            let connection = transaction.connection
            // Messages another ingest process is activating right now are left to it.
            let due = try connection.rows(
                """
                SELECT id, app_id, request FROM messages WHERE status IN ('scheduled', 'queued') AND send_at <= $1
                ORDER BY send_at LIMIT 100 FOR UPDATE SKIP LOCKED
                """, [.integer(now)]) { ($0.int(0), $0.int(1), $0.text(2)) }
            for (id, appID, request) in due {
                let spec = try MessageSpec(storedText: request)
                let shards = try ShardPlan.shards(of: spec, appID: appID, shardSize: shardSize, connection)
                if !shards.isEmpty {
                    try connection.run(
                        """
                        INSERT INTO message_shards (message_id, first_device, last_device, by_timezone, timezone_offset, due_at, status)
                        SELECT $1::bigint, u.first, u.last, u.by_timezone, u.timezone_offset, u.due_at, 'pending'
                        FROM unnest($2::bigint[], $3::bigint[], $4::boolean[], $5::bigint[], $6::bigint[])
                          AS u(first, last, by_timezone, timezone_offset, due_at)
                        """, [.integer(id), .integers(shards.map(\.first)), .integers(shards.map(\.last)), .booleans(shards.map(\.byTimezone)),
                         .texts(shards.map { $0.timezoneOffset.map { String($0) } }), .integers(shards.map(\.dueAt))])
                }
                try connection.run("UPDATE messages SET status = 'sending', updated_at = $1 WHERE id = $2", [.integer(now), .integer(id)])
            }
            return due.count
        }
    }

    public func leaseShards(worker: String, count: Int, now: Int64, leaseUntil: Int64) throws(StoreError) -> [Int64] {
        guard count > 0 else { return [] }
        return try database.write { transaction in
            let connection = transaction.connection
            let candidates = try connection.rows(
                """
                SELECT s.id, s.message_id, m.send_rate IS NOT NULL FROM message_shards s JOIN messages m ON m.id = s.message_id
                WHERE s.status = 'pending' AND s.due_at <= $1 AND m.status = 'sending'
                  AND (m.send_rate IS NULL OR NOT EXISTS (
                    SELECT 1 FROM message_shards o WHERE o.message_id = s.message_id AND o.status = 'leased'))
                ORDER BY s.due_at, s.message_id, s.id LIMIT $2 FOR UPDATE OF s SKIP LOCKED
                """, [.integer(now), .integer(Int64(count * 4))]) { ($0.int(0), $0.int(1), $0.bool(2)) }
            var leased: [Int64] = []
            var rateLimited: Set<Int64> = []
            for (shard, message, limited) in candidates where leased.count < count {
                if limited {
                    guard rateLimited.insert(message).inserted else { continue }
                }
                leased.append(shard)
            }
            if !leased.isEmpty {
                try connection.run(
                    "UPDATE message_shards SET status = 'leased', lease_owner = $1, lease_until = $2, attempts = attempts + 1 WHERE id = ANY($3::bigint[])",
                    [.text(worker), .integer(leaseUntil), .integers(leased)])
            }
            return leased
        }
    }

    public func releaseLeases(now: Int64, liveWorkers: Set<String>) throws(StoreError) -> Int {
        try database.write { transaction in
            let connection = transaction.connection
            // A shard its worker is writing to right now holds its row lock: its lease is live.
            let leased = try connection.rows(
                """
                SELECT s.id, s.lease_owner, s.lease_until, m.status FROM message_shards s JOIN messages m ON m.id = s.message_id
                WHERE s.status = 'leased' FOR UPDATE OF s SKIP LOCKED
                """) { ($0.int(0), $0.text(1), $0.int(2), $0.text(3)) }
            var cancelled: [Int64] = [], pending: [Int64] = []
            for (id, owner, until, messageStatus) in leased where until < now || !liveWorkers.contains(owner) {
                // A shard of a deleted message is cancelled rather than queued again.
                if messageStatus == MessageState.deleted.rawValue { cancelled.append(id) } else { pending.append(id) }
            }
            for (state, ids) in [(ShardState.cancelled, cancelled), (.pending, pending)] where !ids.isEmpty {
                try connection.run("UPDATE message_shards SET status = $1, lease_owner = NULL WHERE id = ANY($2::bigint[])",
                                   [.text(state.rawValue), .integers(ids)])
            }
            return cancelled.count + pending.count
        }
    }

    /// Waits for each answer no longer than the health check does (`probeTimeout`): /metrics shows
    /// it, and a scrape must not wait out the statement timeout.
    public func queueDepth() throws(StoreError) -> QueueDepth {
        try database.read { connection in try connection.answering(within: database.probeTimeout) {
            var messages: [String: Int] = [:], shards: [String: Int] = [:]
            for (status, count) in try connection.rows(
                "SELECT status, count(*) FROM messages WHERE status IN ('scheduled', 'queued', 'sending') GROUP BY status", [], {
                    ($0.text(0), Int($0.int(1)))
                }) { messages[status] = count }
            for (status, count) in try connection.rows(
                "SELECT status, count(*) FROM message_shards WHERE status IN ('pending', 'leased') GROUP BY status", [], {
                    ($0.text(0), Int($0.int(1)))
                }) { shards[status] = count }
            let retrying = try connection.first(
                "SELECT coalesce(sum(s.retrying), 0) FROM message_shards s JOIN messages m ON m.id = s.message_id WHERE m.status = 'sending'"
            ) { Int($0.int(0)) } ?? 0
            return QueueDepth(messages: messages, shards: shards, retrying: retrying)
        } }
    }
}
