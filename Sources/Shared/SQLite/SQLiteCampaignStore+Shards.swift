import Foundation
import Core

/// The worker side of the shard lifecycle.
extension SQLiteCampaignStore {
    public func claimShard(_ shard: Int64, worker: String, leaseUntil: Int64) throws(StoreError) -> ShardWork? {
        try database.write { writer -> ShardWork? in
            let connection = writer.connection
            guard let row = try connection.prepare(
                """
                SELECT s.message_id, s.first_device, s.last_device, s.by_timezone, s.timezone_offset, s.status, s.lease_owner,
                  s.attempts, m.code, m.hash, m.app_id, m.request, m.status
                FROM message_shards s JOIN messages m ON m.id = s.message_id WHERE s.id = ?
                """
            ).first([.integer(shard)], { row in
                (message: row.int(0), first: row.int(1), last: row.int(2), byTimezone: row.int(3) != 0, offset: row.optionalInt(4),
                 status: row.text(5), owner: row.optionalText(6), attempts: Int(row.int(7)), code: row.text(8), hash: row.text(9),
                 appID: row.int(10), request: row.text(11), messageStatus: row.text(12))
            }) else { return nil }
            guard row.status == ShardState.leased.rawValue, row.owner == worker else { return nil }
            guard row.messageStatus != MessageState.deleted.rawValue else {
                try connection.prepare("UPDATE message_shards SET status = 'cancelled' WHERE id = ?").run([.integer(shard)])
                return nil
            }
            try connection.prepare("UPDATE message_shards SET lease_until = ? WHERE id = ?").run([.integer(leaseUntil), .integer(shard)])
            return ShardWork(
                shardID: shard, messageID: row.message, messageCode: row.code, hash: row.hash,
                app: database.appCode(row.appID) ?? "", appID: row.appID, spec: try Self.decode(row.request),
                firstDevice: row.first, lastDevice: row.last, timezoneFilter: row.byTimezone ? .some(row.offset) : .none,
                attempts: row.attempts)
        }
    }

    /// The page query for a shard: its device range, deliverable and subscribed devices with a token,
    /// the message's platforms, explicit devices or users, tag conditions, and not yet recorded.
    static func targetQuery(_ work: ShardWork, after: Int64, limit: Int) -> (String, [SQLiteValue]) {
        // Explicit users or devices may use their indexes; everything else walks the id range, so
        // `+` keeps SQLite from choosing an index on app_id or push_token (which would make every page
        // scan and sort the whole app: 158 ms instead of 1 ms per page at a million devices).
        let explicit = work.spec.users != nil || work.spec.devices != nil
        var sql = """
            SELECT d.id, d.hwid, d.platform, d.push_token, d.gateway, d.language, d.badge FROM devices d
            WHERE \(explicit ? "" : "+")d.app_id = ? AND d.id > ? AND d.id <= ? AND +d.push_token IS NOT NULL AND d.subscribed = 1
              AND d.token_invalid_reason IS NULL
            """
        var bindings: [SQLiteValue] = [.integer(work.appID), .integer(after), .integer(work.lastDevice)]
        let platforms = Platform.deliverable.filter { work.spec.platforms?.contains($0) ?? true }
        sql += " AND d.platform IN (\(platforms.isEmpty ? "NULL" : platforms.map(String.init).joined(separator: ",")))"
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
            try connection.prepare(sql).rows(bindings) { row in
                Target(deviceID: row.int(0), hwid: row.text(1), platform: Int(row.int(2)), pushToken: row.text(3),
                       gateway: row.optionalText(4), language: row.optionalText(5), badge: row.int(6))
            }
        }
    }

    public func recentSends(deviceIDs: [Int64], since1: Int64, since2: Int64) throws(StoreError) -> [Int64: (Int, Int)] {
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

    public func record(_ outcomes: [DeliveryRecord], work: ShardWork, worker: String, leaseUntil: Int64, finished: Bool,
                       now: Int64) throws(StoreError) -> Bool {
        try database.write { writer in
            let connection = writer.connection
            let insert = try connection.prepare(
                "INSERT OR IGNORE INTO deliveries (message_id, device_id, status, reason, created_at) VALUES (?, ?, ?, ?, ?)")
            var counts: [DeliveryRecord.Outcome: Int64] = [:]
            var errors: [String: Int64] = [:]
            for outcome in outcomes {
                if let token = outcome.deadToken {
                    // Only the token that was rejected: the device may have registered a new one meanwhile.
                    try connection.prepare("UPDATE devices SET token_invalid_reason = ? WHERE id = ? AND push_token = ?")
                        .run([.text(outcome.reason ?? "InvalidToken"), .integer(outcome.deviceID), .text(token)])
                }
                try insert.run([.integer(work.messageID), .integer(outcome.deviceID), .text(outcome.outcome.rawValue),
                                outcome.reason.map(SQLiteValue.text) ?? .null, .integer(now)])
                guard connection.changes == 1 else { continue }
                counts[outcome.outcome, default: 0] += 1
                if outcome.outcome == .failed { errors[outcome.reason ?? "Unknown", default: 0] += 1 }
            }
            for (reason, count) in errors {
                try connection.prepare(
                    "INSERT INTO message_errors (message_id, reason, count) VALUES (?1, ?2, ?3) ON CONFLICT DO UPDATE SET count = count + ?3"
                ).run([.integer(work.messageID), .text(reason), .integer(count)])
            }
            let sent = counts[.sent] ?? 0, failed = counts[.failed] ?? 0, throttled = counts[.throttled] ?? 0
            try connection.prepare(
                "UPDATE message_shards SET targeted = targeted + ?, sent = sent + ?, failed = failed + ?, throttled = throttled + ? WHERE id = ?"
            ).run([.integer(sent + failed + throttled), .integer(sent), .integer(failed), .integer(throttled), .integer(work.shardID)])
            guard let state = try connection.prepare(
                "SELECT s.status, s.lease_owner, m.status FROM message_shards s JOIN messages m ON m.id = s.message_id WHERE s.id = ?"
            ).first([.integer(work.shardID)], { ($0.text(0), $0.optionalText(1), $0.text(2)) }) else { return false }
            guard state.0 == ShardState.leased.rawValue, state.1 == worker else { return false }
            if state.2 == MessageState.deleted.rawValue {
                try connection.prepare("UPDATE message_shards SET status = 'cancelled' WHERE id = ?").run([.integer(work.shardID)])
                return false
            }
            try connection.prepare("UPDATE message_shards SET lease_until = ?, status = ? WHERE id = ?")
                .run([.integer(leaseUntil), .text((finished ? ShardState.done : .leased).rawValue), .integer(work.shardID)])
            return true
        }
    }
}
