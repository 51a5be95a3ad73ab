import Foundation
import Core
import StoreCore

/// The worker side of the shard lifecycle.
extension SQLiteCampaignStore {
    public func extendLease(shard: Int64, worker: String, leaseUntil: Int64) throws(StoreError) -> Bool {
        try database.write { writer in
            try writer.connection.prepare(
                "UPDATE message_shards SET lease_until = ? WHERE id = ? AND lease_owner = ? AND status = 'leased'"
            ).run([.integer(leaseUntil), .integer(shard), .text(worker)])
            return writer.connection.changes == 1
        }
    }

    public func markAttempted(_ work: ShardWork, through deviceID: Int64, worker: String) throws(StoreError) -> Bool {
        try database.write { writer in
            try writer.connection.prepare(
                """
                UPDATE message_shards SET attempted_through = max(coalesce(attempted_through, ?1), ?1)
                WHERE id = ?2 AND lease_owner = ?3 AND status = 'leased'
                """
            ).run([.integer(deviceID), .integer(work.shardID), .text(worker)])
            return writer.connection.changes == 1
        }
    }

    /// The page query for a shard: its device range, deliverable and subscribed devices with a token,
    /// opted in unless the message is silent on their platform, the message's platforms, explicit
    /// devices or users, tag conditions, and not yet recorded. A Live Activity message goes instead
    /// to the iOS devices' active activity tokens (`liveActivityTokens`), whatever their push token.
    static func targetQuery(_ work: ShardWork, after: Int64, limit: Int) -> (String, [SQLiteValue]) {
        // Explicit users or devices may use their indexes; everything else walks the id range, so
        // `+` keeps SQLite from choosing an index on app_id or push_token (which would make every page
        // scan and sort the whole app: 158 ms instead of 1 ms per page at a million devices).
        let explicit = work.spec.users != nil || work.spec.devices != nil
        var sql: String
        var bindings: [SQLiteValue]
        if let activity = work.spec.liveActivity {
            sql = """
                SELECT d.id, \(Target.columns(token: "t.token")) FROM devices d
                JOIN live_activity_tokens t ON \(liveActivityTokens)
                WHERE \(explicit ? "" : "+")d.app_id = ? AND d.id > ? AND d.id <= ? AND d.platform = \(Platform.iOS)
                """
            bindings = [.text(activity.tokenActivityID), .integer(work.appID), .integer(after), .integer(work.lastDevice)]
        } else {
            sql = """
                SELECT d.id, \(Target.columns(token: "d.push_token")) FROM devices d
                WHERE \(explicit ? "" : "+")d.app_id = ? AND d.id > ? AND d.id <= ? AND +d.push_token IS NOT NULL AND d.subscribed = 1
                  AND d.token_invalid_reason IS NULL
                """
            bindings = [.integer(work.appID), .integer(after), .integer(work.lastDevice)]
            let platforms = work.spec.pagePlatforms
            sql += " AND d.platform IN (\(platforms.isEmpty ? "NULL" : platforms.map(String.init).joined(separator: ",")))"
            sql += work.spec.optedInCondition
        }
        if case .some(let offset) = work.timezoneFilter {
            if let offset {
                sql += " AND d.timezone_offset = ?"
                bindings.append(.integer(offset))
            } else {
                sql += " AND d.timezone_offset IS NULL"
            }
        }
        if let users = work.spec.users {
            sql += " AND d.user_id IN (SELECT value FROM json_each(?))"
            bindings.append(.text(JSON.array(users.map(JSON.string)).text))
        } else if let devices = work.spec.devices {
            let list = JSON.array(devices.map(JSON.string)).text
            sql += " AND (d.hwid IN (SELECT value FROM json_each(?)) OR d.push_token IN (SELECT value FROM json_each(?)))"
            bindings.append(contentsOf: [.text(list), .text(list)])
        } else if let devicesFilter = work.spec.filter {
            let filter = TargetFilter.sql(for: devicesFilter, app: work.app)
            sql += " AND (\(filter.sql))"
            bindings.append(contentsOf: filter.bindings)
        } else if !work.spec.conditions.isEmpty {
            let filter = TargetFilter.sql(for: work.spec.conditions, combinedWith: work.spec.conditionsOperator)
            sql += " AND (\(filter.sql))"
            bindings.append(contentsOf: filter.bindings)
        }
        sql += " AND NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.message_id = ? AND x.device_id = d.id) ORDER BY d.id LIMIT ?"
        bindings.append(contentsOf: [.integer(work.messageID), .integer(Int64(limit))])
        return (sql, bindings)
    }

    public func targets(of work: ShardWork, after: Int64, limit: Int) throws(StoreError) -> [Target] {
        let (sql, bindings) = Self.targetQuery(work, after: after, limit: limit)
        return try database.read { connection in
            try connection.prepare(sql).rows(bindings) { Target(row: $0) }
        }
    }

    /// Two reads, the targets and then their devices' recent sends (each cheap in process).
    public func cappedTargets(of work: ShardWork, after: Int64, limit: Int, since1: Int64,
                              since2: Int64) throws(StoreError) -> (targets: [Target], recentSends: [Int64: (Int, Int)]) {
        let page = try targets(of: work, after: after, limit: limit)
        return (page, try recentSends(deviceIDs: page.map(\.deviceID), since1: since1, since2: since2))
    }

    /// For each device, pushes recorded as sent since each of the two moments: (since1, since2).
    func recentSends(deviceIDs: [Int64], since1: Int64, since2: Int64) throws(StoreError) -> [Int64: (Int, Int)] {
        guard !deviceIDs.isEmpty else { return [:] }
        let list = JSON.array(deviceIDs.map { JSON.int($0) }).text
        return try database.read { connection in
            var counts: [Int64: (Int, Int)] = [:]
            for (device, first, second) in try connection.prepare(
                """
                SELECT device_id, sum(created_at > ?1), sum(created_at > ?2) FROM deliveries
                WHERE status = 'sent' AND device_id IN (SELECT value FROM json_each(?3)) AND created_at > min(?1, ?2)
                GROUP BY device_id
                """
            ).rows([.integer(since1), .integer(since2), .text(list)], { ($0.int(0), Int($0.int(1)), Int($0.int(2))) }) {
                counts[device] = (first, second)
            }
            return counts
        }
    }

    public func record(_ outcomes: [DeliveryRecord], work: ShardWork, worker: String, leaseUntil: Int64, now: Int64,
                       attemptedThrough: Int64?) throws(StoreError) -> Bool {
        try database.write { writer in
            let connection = writer.connection
            let insert = try connection.prepare(
                "INSERT OR IGNORE INTO deliveries (message_id, device_id, status, reason, created_at) VALUES (?, ?, ?, ?, ?)")
            var tally = ShardTally()
            var sent: [Int64] = []
            for outcome in outcomes {
                try Self.markDead(outcome, work: work, now: now, connection)
                try insert.run([.integer(work.messageID), .integer(outcome.deviceID), .text(outcome.outcome.rawValue),
                                outcome.reason.map(SQLiteValue.text) ?? .null, .integer(now)])
                guard connection.changes == 1 else { continue }
                tally.targeted += 1
                tally.count(outcome)
                if outcome.outcome == .sent { sent.append(outcome.deviceID) }
                if outcome.outcome == .retrying {
                    let schedule = outcome.schedule ?? RetrySchedule(nextAt: now, expiresAt: now)
                    try connection.prepare(
                        """
                        INSERT INTO delivery_retries (message_id, device_id, shard_id, attempts, ambiguous, next_at, expires_at, reason)
                        VALUES (?, ?, ?, 1, ?, ?, ?, ?)
                        """
                    ).run([.integer(work.messageID), .integer(outcome.deviceID), .integer(work.shardID), .integer(outcome.ambiguous ? 1 : 0),
                           .integer(schedule.nextAt), .integer(schedule.expiresAt), .text(outcome.reason ?? "Unknown")])
                    if outcome.ambiguous { tally.ambiguous += 1 }
                }
            }
            try Self.noteActivityPushes(sent, work: work, now: now, connection)
            try tally.apply(to: work, connection)
            return try Self.keepLease(work, worker: worker, leaseUntil: leaseUntil, attemptedThrough: attemptedThrough, connection)
        }
    }

    public func dueRetries(of work: ShardWork, now: Int64, limit: Int) throws(StoreError) -> [PendingRetry] {
        try database.read { connection in
            try connection.prepare(
                """
                SELECT r.device_id, r.attempts, r.ambiguous, r.expires_at, r.reason, \(Self.retryTarget(work)),
                  \(Target.columns(token: work.spec.liveActivity == nil ? "d.push_token" : "t.token"))
                FROM delivery_retries r INDEXED BY delivery_retries_due LEFT JOIN devices d ON d.id = r.device_id
                \(work.spec.liveActivity == nil ? "" : "LEFT JOIN live_activity_tokens t ON \(Self.liveActivityTokens)")
                WHERE r.shard_id = ? AND r.next_at <= ? AND r.sending = 0 ORDER BY r.next_at, r.device_id LIMIT ?
                """
            ).rows((work.spec.liveActivity.map { [.text($0.tokenActivityID)] } ?? [])
                   + [.integer(work.shardID), .integer(now), .integer(Int64(limit))]) { PendingRetry(row: $0) }
        }
    }

    /// Whether a retry's device can still be sent to: its push token, or its activity token.
    static func retryTarget(_ work: ShardWork) -> String {
        work.spec.liveActivity == nil
            ? "d.id IS NOT NULL AND d.push_token IS NOT NULL AND d.subscribed = 1 AND d.token_invalid_reason IS NULL"
            : "t.id IS NOT NULL"
    }

    /// The join of a Live Activity message's tokens (bound to its `tokenActivityID`): a start goes to
    /// push-to-start tokens, an update or end to the activity's; only active ones.
    static let liveActivityTokens = "t.device_id = d.id AND coalesce(t.activity_id, '') = ? AND t.active = 1"

    public func nextRetry(of work: ShardWork) throws(StoreError) -> Int64? {
        try database.read { connection in
            try connection.prepare("SELECT min(next_at) FROM delivery_retries WHERE shard_id = ?").first([.integer(work.shardID)]) {
                $0.optionalInt(0)
            } ?? nil
        }
    }

    public func claimRetries(_ deviceIDs: [Int64], work: ShardWork, worker: String) throws(StoreError) -> Bool {
        try database.write { writer in
            let connection = writer.connection
            try connection.prepare(
                "UPDATE delivery_retries SET sending = 1 WHERE message_id = ? AND device_id IN (SELECT value FROM json_each(?))"
            ).run([.integer(work.messageID), .text(JSON.array(deviceIDs.map { JSON.int($0) }).text)])
            return try Self.ownsLease(work, worker: worker, connection)
        }
    }

    public func recordRetries(_ outcomes: [DeliveryRecord], work: ShardWork, worker: String, leaseUntil: Int64,
                              now: Int64) throws(StoreError) -> Bool {
        try database.write { writer in
            let connection = writer.connection
            var tally = ShardTally()
            var sent: [Int64] = []
            for outcome in outcomes {
                let key: [SQLiteValue] = [.integer(work.messageID), .integer(outcome.deviceID)]
                try Self.markDead(outcome, work: work, now: now, connection)
                if outcome.outcome == .retrying {
                    let schedule = outcome.schedule ?? RetrySchedule(nextAt: now, expiresAt: now)
                    let ambiguous = try connection.prepare(
                        """
                        UPDATE delivery_retries SET attempts = attempts + 1, ambiguous = ambiguous + ?3, sending = 0, next_at = ?4, reason = ?5
                        WHERE message_id = ?1 AND device_id = ?2 RETURNING ambiguous
                        """
                    ).first(key + [.integer(outcome.ambiguous ? 1 : 0), .integer(schedule.nextAt), .text(outcome.reason ?? "Unknown")]) {
                        $0.int(0)
                    }
                    if outcome.ambiguous, ambiguous == 1 { tally.ambiguous += 1 }
                    continue
                }
                try connection.prepare(
                    "UPDATE deliveries SET status = ?3, reason = ?4, created_at = ?5 WHERE message_id = ?1 AND device_id = ?2 AND status = 'retrying'"
                ).run(key + [.text(outcome.outcome.rawValue), outcome.reason.map(SQLiteValue.text) ?? .null, .integer(now)])
                guard connection.changes == 1 else { continue }
                try connection.prepare("DELETE FROM delivery_retries WHERE message_id = ? AND device_id = ?").run(key)
                tally.retrying -= 1
                tally.count(outcome)
                if outcome.outcome == .sent { sent.append(outcome.deviceID) }
            }
            try Self.noteActivityPushes(sent, work: work, now: now, connection)
            try tally.apply(to: work, connection)
            return try Self.keepLease(work, worker: worker, leaseUntil: leaseUntil, connection)
        }
    }

    public func finishShard(_ work: ShardWork, worker: String, resumeAt: Int64?) throws(StoreError) -> Int64? {
        try database.write { writer in
            let connection = writer.connection
            guard try Self.ownsLease(work, worker: worker, connection) else { return nil }
            let nextRetry = try connection.prepare("SELECT min(next_at) FROM delivery_retries WHERE shard_id = ?")
                .first([.integer(work.shardID)]) { $0.optionalInt(0) } ?? nil
            guard let due = [resumeAt, nextRetry].compactMap({ $0 }).min() else {
                try connection.prepare("UPDATE message_shards SET status = 'done', lease_owner = NULL WHERE id = ?").run([.integer(work.shardID)])
                return nil
            }
            try connection.prepare("UPDATE message_shards SET status = 'pending', lease_owner = NULL, due_at = ? WHERE id = ?")
                .run([.integer(due), .integer(work.shardID)])
            return due
        }
    }

    // MARK: - Shared by the writes above

    /// Marks a token the provider called dead: the device's push token (only that token, since the
    /// device may have registered a new one meanwhile), or for a Live Activity message the activity
    /// token it went to (which then becomes inactive).
    static func markDead(_ outcome: DeliveryRecord, work: ShardWork, now: Int64, _ connection: SQLiteConnection) throws {
        guard let token = outcome.deadToken else { return }
        if work.spec.liveActivity != nil {
            try connection.prepare("UPDATE live_activity_tokens SET active = 0, updated_at = ? WHERE device_id = ? AND token = ?")
                .run([.integer(now), .integer(outcome.deviceID), .text(token)])
        } else {
            try connection.prepare("UPDATE devices SET token_invalid_reason = ? WHERE id = ? AND push_token = ?")
                .run([.text(outcome.reason ?? "InvalidToken"), .integer(outcome.deviceID), .text(token)])
        }
    }

    /// Whether the shard is still leased to `worker` and its message not deleted (a shard of a
    /// deleted message is cancelled here).
    static func ownsLease(_ work: ShardWork, worker: String, _ connection: SQLiteConnection) throws -> Bool {
        guard let state = try connection.prepare(
            "SELECT s.status, s.lease_owner, m.status FROM message_shards s JOIN messages m ON m.id = s.message_id WHERE s.id = ?"
        ).first([.integer(work.shardID)], { ($0.text(0), $0.optionalText(1), $0.text(2)) }) else { return false }
        guard state.0 == ShardState.leased.rawValue, state.1 == worker else { return false }
        if state.2 == MessageState.deleted.rawValue {
            try connection.prepare("UPDATE message_shards SET status = 'cancelled' WHERE id = ?").run([.integer(work.shardID)])
            return false
        }
        return true
    }

    /// `ownsLease`, and when it does, extends the lease.
    /// Extends the lease when it is still the worker's, and notes `attemptedThrough` (see `markAttempted`).
    static func keepLease(_ work: ShardWork, worker: String, leaseUntil: Int64, attemptedThrough: Int64? = nil,
                          _ connection: SQLiteConnection) throws -> Bool {
        guard try ownsLease(work, worker: worker, connection) else { return false }
        try connection.prepare(
            "UPDATE message_shards SET lease_until = ?1, attempted_through = max(coalesce(attempted_through, ?2), coalesce(?2, attempted_through)) WHERE id = ?3"
        ).run([.integer(leaseUntil), attemptedThrough.map(SQLiteValue.integer) ?? .null, .integer(work.shardID)])
        return true
    }
}

/// Writes a tally into the SQLite tables.
extension ShardTally {
    func apply(to work: ShardWork, _ connection: SQLiteConnection) throws {
        for (reason, count) in errors {
            try connection.prepare(
                "INSERT INTO message_errors (message_id, reason, count) VALUES (?1, ?2, ?3) ON CONFLICT DO UPDATE SET count = count + ?3"
            ).run([.integer(work.messageID), .text(reason), .integer(count)])
        }
        try connection.prepare(
            """
            UPDATE message_shards SET targeted = targeted + ?, sent = sent + ?, failed = failed + ?, throttled = throttled + ?,
              retrying = retrying + ?, ambiguous = ambiguous + ? WHERE id = ?
            """
        ).run([.integer(targeted), .integer(sent), .integer(failed), .integer(throttled), .integer(retrying), .integer(ambiguous),
               .integer(work.shardID)])
    }
}
