import Foundation
import Core
import StoreCore

/// The worker side of the shard lifecycle. A worker's write locks the shard's row (its counters,
/// or `ownsLease`), so that the lease sweeper, which skips locked rows, never takes a shard back
/// in the middle of a worker's write.
extension PostgresCampaignStore {
    // The two writes below are one idempotent statement each: autocommit, without BEGIN and COMMIT
    // round trips.

    public func extendLease(shard: Int64, worker: String, leaseUntil: Int64) throws(StoreError) -> Bool {
        try database.autocommit { connection in
            try connection.run(
                "UPDATE message_shards SET lease_until = $1 WHERE id = $2 AND lease_owner = $3 AND status = 'leased'",
                [.integer(leaseUntil), .integer(shard), .text(worker)]) == 1
        }
    }

    public func markAttempted(_ work: ShardWork, through deviceID: Int64, worker: String) throws(StoreError) -> Bool {
        try database.autocommit { connection in
            try connection.run(
                """
                UPDATE message_shards SET attempted_through = greatest(coalesce(attempted_through, $1), $1)
                WHERE id = $2 AND lease_owner = $3 AND status = 'leased'
                """, [.integer(deviceID), .integer(work.shardID), .text(worker)]) == 1
        }
    }

    /// The page query for a shard: its devices after `after` up to `through` (walked in id order
    /// on the primary key), deliverable and subscribed devices with a token, opted in unless the
    /// message is silent on their platform, the message's platforms, explicit devices or users, tag
    /// conditions (reading the tag rows of that window, see `PostgresTargetFilter`), and not yet
    /// recorded. With `sentSince`, each row also counts the pushes sent to its device since each of
    /// the two moments (`cappedTargets`).
    ///
    /// It is planned each time it runs (`plannedEachTime`): a plan cached while `deliveries` held
    /// a batch or none (a new or emptied table, analyzed as empty) scans the table for each target,
    /// and kept while the campaign fills it, each page took longer than the one before (37 ms, then
    /// 300–545 ms a page, until autovacuum analyzed the table: two 1,000,000-device campaigns of three
    /// took 17–18 s instead of 8–9, one benchmark run 39 s). Planning costs a page about 0.3 ms.
    static func targetQuery(_ work: ShardWork, after: Int64, through: Int64, limit: Int,
                            sentSince: (Int64, Int64)? = nil) -> (String, [PostgresValue]) {
        var parameters = PostgresParameters([.integer(work.appID), .integer(after), .integer(through)])
        let window = PostgresTargetFilter.Window(after: "$2", through: "$3")
        // Counted per target on the sent deliveries' index, after the page's other conditions. (Read
        // once for the window instead, like a tag condition, the index could not narrow the range of
        // devices by time: it would read every sent delivery kept for the window's devices.)
        let recent = sentSince.map { since in
            let (first, second) = (parameters.add(.integer(since.0)), parameters.add(.integer(since.1)))
            return (columns: ", r.first, r.second", join: """
                 CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE x.created_at > \(first)::bigint) AS first,
                  count(*) FILTER (WHERE x.created_at > \(second)::bigint) AS second FROM deliveries x
                  WHERE x.status = 'sent' AND x.device_id = d.id AND x.created_at > least(\(first)::bigint, \(second)::bigint)) r
                """)
        } ?? (columns: "", join: "")
        var sql: String
        if let activity = work.spec.liveActivity {
            sql = """
                SELECT d.id, \(Target.columns(token: "t.token"))\(recent.columns) FROM devices d
                JOIN live_activity_tokens t ON \(liveActivityTokens(parameters.add(.text(activity.tokenActivityID))))\(recent.join)
                WHERE d.app_id = $1 AND \(window.holds("d.id")) AND d.platform = \(Platform.iOS)
                """
        } else {
            sql = """
                SELECT d.id, \(Target.columns(token: "d.push_token"))\(recent.columns) FROM devices d\(recent.join)
                WHERE d.app_id = $1 AND \(window.holds("d.id")) AND d.push_token IS NOT NULL AND d.subscribed
                  AND d.token_invalid_reason IS NULL
                """
            let platforms = work.spec.pagePlatforms
            sql += platforms.isEmpty ? " AND false" : " AND d.platform IN (\(platforms.map(String.init).joined(separator: ",")))"
            sql += work.spec.optedInCondition
        }
        if case .some(let offset) = work.timezoneFilter {
            if let offset {
                sql += " AND d.timezone_offset = \(parameters.add(.integer(offset)))"
            } else {
                sql += " AND d.timezone_offset IS NULL"
            }
        }
        if let users = work.spec.users {
            sql += " AND d.user_id = ANY(\(parameters.add(.texts(users)))::text[])"
        } else if let devices = work.spec.devices {
            let list = parameters.add(.texts(devices))
            sql += " AND (d.hwid = ANY(\(list)::text[]) OR d.push_token = ANY(\(list)::text[]))"
        } else if let filter = work.spec.filter {
            sql += " AND (\(PostgresTargetFilter.sql(for: filter, appCode: work.app, app: "$1", window: window, &parameters)))"
        } else if !work.spec.conditions.isEmpty {
            let conditions = PostgresTargetFilter.sql(for: work.spec.conditions, combinedWith: work.spec.conditionsOperator, app: "$1",
                                                      window: window, &parameters)
            sql += " AND (\(conditions))"
        }
        // Looked up per device on the deliveries' key (`OFFSET 0` keeps the subquery from becoming
        // a join): planned as a join while the deliveries' statistics still said the
        // campaign had few, every page read all of the message's deliveries so far. Only devices up
        // to the highest one of the rest of the window with a delivery can have one, so the page first
        // finds that device (one descent of the key, evaluated once) and looks up only those below
        // it: in a first pass, none.
        let message = parameters.add(.integer(work.messageID))
        sql += """
             AND ((d.id > (SELECT max(x.device_id) FROM deliveries x WHERE x.message_id = \(message) AND \(window.holds("x.device_id"))))
               IS NOT FALSE OR NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.message_id = \(message) AND x.device_id = d.id OFFSET 0))
            """
        sql += " ORDER BY d.id LIMIT \(parameters.add(.integer(Int64(limit))))"
        return (sql, parameters.values)
    }

    /// Whether the page query of `work` reads tag rows (a filter or conditions, unless explicit
    /// devices or users take their place): then it reads windows of the range.
    static func readsTags(_ work: ShardWork) -> Bool {
        work.spec.users == nil && work.spec.devices == nil && (work.spec.filter != nil || !work.spec.conditions.isEmpty)
    }

    /// Up to `limit` rows of the page query after `after`, in device order: fewer only at the end
    /// of the shard. A query that reads tag rows reads a window of the range sized for the rows
    /// still wanted (`PageWindow`, from the ids per target of the message's last page), and goes on
    /// from the window's end while it comes back short.
    private func page<Row>(of work: ShardWork, after: Int64, limit: Int, sentSince: (Int64, Int64)?,
                           _ map: @escaping (PostgresRow) -> Row, deviceID: @escaping (Row) -> Int64) throws(StoreError) -> [Row] {
        guard Self.readsTags(work) else {
            let (sql, values) = Self.targetQuery(work, after: after, through: work.lastDevice, limit: limit, sentSince: sentSince)
            return try database.read { connection in try connection.rows(sql, values, plannedEachTime: true, map) }
        }
        var window = pageWindows.withLock { $0[work.messageID] } ?? PageWindow()
        let rows = try database.read { connection in
            var rows: [Row] = []
            var from = after
            var queries = 0
            while rows.count < limit && from < work.lastDevice {
                let wanted = limit - rows.count
                let through = window.end(after: from, wanted: wanted, last: work.lastDevice)
                let (sql, values) = Self.targetQuery(work, after: from, through: through, limit: wanted, sentSince: sentSince)
                let read = try connection.rows(sql, values, plannedEachTime: true, map)
                rows += read
                queries += 1
                from = read.count == wanted ? deviceID(read[read.count - 1]) : through
                window.observe(read: from - after, found: rows.count, cutByEnd: read.count < wanted && through == work.lastDevice)
            }
            if queries > 0 && rows.count == limit { window.filled(afterQueries: queries) }
            return rows
        }
        pageWindows.withLock { windows in
            if windows.count >= PageWindow.remembered { windows.removeAll() }
            windows[work.messageID] = window
        }
        return rows
    }

    public func targets(of work: ShardWork, after: Int64, limit: Int) throws(StoreError) -> [Target] {
        try page(of: work, after: after, limit: limit, sentSince: nil, { Target(row: $0) }, deviceID: \.deviceID)
    }

    /// The page, and per target a lookup of its device's sent deliveries, in the same statement
    /// (one per window when the page reads tags). Planned per device, the lookup takes their index
    /// from a page of deliveries on (only a plan made while the table is empty scans it); a separate
    /// read of the page's devices as a list could prefer to scan every sent delivery, and needed
    /// `enable_seqscan = off` in a transaction of its own: three more round trips.
    public func cappedTargets(of work: ShardWork, after: Int64, limit: Int, since1: Int64,
                              since2: Int64) throws(StoreError) -> (targets: [Target], recentSends: [Int64: (Int, Int)]) {
        let rows = try page(of: work, after: after, limit: limit, sentSince: (since1, since2), { row in
            (target: Target(row: row), first: Int(row.int(Target.columnCount + 1)), second: Int(row.int(Target.columnCount + 2)))
        }, deviceID: \.target.deviceID)
        var recentSends: [Int64: (Int, Int)] = [:]
        for row in rows where row.first > 0 || row.second > 0 { recentSends[row.target.deviceID] = (row.first, row.second) }
        return (rows.map(\.target), recentSends)
    }

    public func record(_ outcomes: [DeliveryRecord], work: ShardWork, worker: String, leaseUntil: Int64, now: Int64,
                       attemptedThrough: Int64?) throws(StoreError) -> Bool {
        if work.spec.liveActivity == nil, !outcomes.contains(where: { $0.outcome == .retrying || $0.deadToken != nil }) {
            return try recordInOneStatement(outcomes, work: work, worker: worker, leaseUntil: leaseUntil, now: now,
                                            attemptedThrough: attemptedThrough)
        }
        return try database.write { transaction in
            let connection = transaction.connection
            try Self.markDead(outcomes, work: work, now: now, connection)
            // One row per (message, device): the first outcome recorded wins. Outcomes are recorded
            // even when the lease was lost meanwhile: they happened, and the next holder skips them.
            let inserted = Set(try connection.rows(
                """
                INSERT INTO deliveries (message_id, device_id, status, reason, created_at)
                SELECT $1::bigint, u.device, u.status, u.reason, $2::bigint FROM unnest($3::bigint[], $4::text[], $5::text[]) AS u(device, status, reason)
                ON CONFLICT DO NOTHING RETURNING device_id
                """,
                [.integer(work.messageID), .integer(now), .integers(outcomes.map(\.deviceID)), .texts(outcomes.map(\.outcome.rawValue)),
                 .texts(outcomes.map(\.reason))]) { $0.int(0) })
            var tally = ShardTally()
            var counted: Set<Int64> = []
            var retries: [DeliveryRecord] = []
            var sent: [Int64] = []
            for outcome in outcomes where inserted.contains(outcome.deviceID) && counted.insert(outcome.deviceID).inserted {
                tally.targeted += 1
                tally.count(outcome)
                if outcome.outcome == .sent { sent.append(outcome.deviceID) }
                if outcome.outcome == .retrying {
                    retries.append(outcome)
                    if outcome.ambiguous { tally.ambiguous += 1 }
                }
            }
            if !retries.isEmpty {
                let schedules = retries.map { $0.schedule ?? RetrySchedule(nextAt: now, expiresAt: now) }
                try connection.run(
                    """
                    INSERT INTO delivery_retries (message_id, device_id, shard_id, attempts, ambiguous, next_at, expires_at, reason)
                    SELECT $1::bigint, u.device, $2::bigint, 1, u.ambiguous, u.next_at, u.expires_at, u.reason
                    FROM unnest($3::bigint[], $4::integer[], $5::bigint[], $6::bigint[], $7::text[]) AS u(device, ambiguous, next_at, expires_at, reason)
                    """,
                    [.integer(work.messageID), .integer(work.shardID), .integers(retries.map(\.deviceID)),
                     .integers(retries.map { $0.ambiguous ? 1 : 0 }), .integers(schedules.map(\.nextAt)), .integers(schedules.map(\.expiresAt)),
                     .texts(retries.map { $0.reason ?? "Unknown" })])
            }
            try Self.noteActivityPushes(sent, work: work, now: now, connection)
            return try tally.apply(to: work, keepingLeaseOf: worker, until: leaseUntil, attemptedThrough: attemptedThrough, connection)
        }
    }

    /// `record` for a batch with only final outcomes (sent, failed, throttled) and no dead token,
    /// the usual one: the deliveries, the failures' reasons and the shard's counters, lease and
    /// mark are one statement in autocommit, one round trip instead of four. The counters add up
    /// the rows the insert made, as `record` does, so a statement run again after a lost
    /// connection adds nothing twice. The failures' reasons are upserted in byte order, the order
    /// `ShardTally.apply` locks them in, so that two workers recording failures of one message never
    /// lock its reason rows in opposite orders (a deadlock).
    ///
    /// The page query left out the devices already recorded, so the insert first goes without
    /// `ON CONFLICT`: a speculative insert costs each row one more index descent and WAL record
    /// (about a third of the statement on a 250-row batch). When a row is there after all (a
    /// batch run again, a device twice in a batch, another holder of the shard), the statement
    /// fails whole with a unique violation, changing nothing, and runs again with `DO NOTHING`.
    private func recordInOneStatement(_ outcomes: [DeliveryRecord], work: ShardWork, worker: String, leaseUntil: Int64, now: Int64,
                                      attemptedThrough: Int64?) throws(StoreError) -> Bool {
        let errors = outcomes.contains { $0.outcome == .failed } ? """
            , errors AS (
              INSERT INTO message_errors (message_id, reason, count)
              SELECT $1::bigint, coalesce(reason, 'Unknown'), count(*) FROM inserted WHERE status = 'failed'
              GROUP BY 2 ORDER BY coalesce(reason, 'Unknown') COLLATE "C"
              ON CONFLICT (message_id, reason) DO UPDATE SET count = message_errors.count + excluded.count)
            """ : ""
        func statement(onConflict: String) -> String {
            """
            WITH inserted AS (
              INSERT INTO deliveries (message_id, device_id, status, reason, created_at)
              SELECT $1::bigint, u.device, u.status, u.reason, $2::bigint FROM unnest($3::bigint[], $4::text[], $5::text[]) AS u(device, status, reason)
              \(onConflict)RETURNING status, reason)\(errors),
            tally AS (
              SELECT count(*) AS targeted, count(*) FILTER (WHERE status = 'sent') AS sent,
                count(*) FILTER (WHERE status = 'failed') AS failed, count(*) FILTER (WHERE status = 'throttled') AS throttled
              FROM inserted)
            \(ShardTally.update(targeted: "t.targeted", sent: "t.sent", failed: "t.failed", throttled: "t.throttled", retrying: "0",
                                ambiguous: "0", shard: "$6", worker: "$7", leaseUntil: "$8", attemptedThrough: "$9", from: "tally t"))
            """
        }
        let values: [PostgresValue] = [
            .integer(work.messageID), .integer(now), .integers(outcomes.map(\.deviceID)), .texts(outcomes.map(\.outcome.rawValue)),
            .texts(outcomes.map(\.reason)), .integer(work.shardID), .text(worker), .integer(leaseUntil),
            attemptedThrough.map(PostgresValue.integer) ?? .null]
        return try database.autocommit { connection in
            do {
                return try connection.first(statement(onConflict: ""), values) { $0.bool(0) } ?? false
            } catch let error as PostgresError where error.sqlState == PostgresError.uniqueViolation {
                return try connection.first(statement(onConflict: "ON CONFLICT DO NOTHING "), values) { $0.bool(0) } ?? false
            }
        }
    }

    /// Planned each time it runs, as the page query is (`targetQuery`): `delivery_retries` is
    /// usually empty and fills during a provider's outage, and a plan cached while it was empty
    /// scans the whole table at each call (psql, a shard's 250 due among 500,000 retries: 77 ms
    /// with that plan, 4 ms planned for the table as it is).
    public func dueRetries(of work: ShardWork, now: Int64, limit: Int) throws(StoreError) -> [PendingRetry] {
        try database.read { connection in
            try connection.rows(
                """
                SELECT r.device_id, r.attempts, r.ambiguous, r.expires_at, r.reason, \(Self.retryTarget(work)),
                  \(Target.columns(token: work.spec.liveActivity == nil ? "d.push_token" : "t.token"))
                FROM delivery_retries r LEFT JOIN devices d ON d.id = r.device_id
                \(work.spec.liveActivity == nil ? "" : "LEFT JOIN live_activity_tokens t ON \(Self.liveActivityTokens("$4"))")
                WHERE r.shard_id = $1 AND r.next_at <= $2 AND NOT r.sending ORDER BY r.next_at, r.device_id LIMIT $3
                """, [.integer(work.shardID), .integer(now), .integer(Int64(limit))]
                    + (work.spec.liveActivity.map { [.text($0.tokenActivityID)] } ?? []), plannedEachTime: true
            ) { PendingRetry(row: $0) }
        }
    }

    /// Whether a retry's device can still be sent to: its push token, or its activity token.
    static func retryTarget(_ work: ShardWork) -> String {
        work.spec.liveActivity == nil
            ? "coalesce(d.push_token IS NOT NULL AND d.subscribed AND d.token_invalid_reason IS NULL, false)"
            : "t.id IS NOT NULL"
    }

    /// The join of a Live Activity message's tokens, `activity` being the parameter of its
    /// `tokenActivityID`: a start goes to push-to-start tokens, an update or end to the activity's;
    /// only active ones.
    static func liveActivityTokens(_ activity: String) -> String {
        "t.device_id = d.id AND coalesce(t.activity_id, '') = \(activity) AND t.active"
    }

    public func nextRetry(of work: ShardWork) throws(StoreError) -> Int64? {
        try database.read { connection in
            try connection.first("SELECT min(next_at) FROM delivery_retries WHERE shard_id = $1", [.integer(work.shardID)]) {
                $0.optionalInt(0)
            } ?? nil
        }
    }

    public func claimRetries(_ deviceIDs: [Int64], work: ShardWork, worker: String) throws(StoreError) -> Bool {
        try database.write { transaction in
            let connection = transaction.connection
            try connection.run("UPDATE delivery_retries SET sending = true WHERE message_id = $1 AND device_id = ANY($2::bigint[])",
                               [.integer(work.messageID), .integers(deviceIDs)])
            return try Self.ownsLease(work, worker: worker, connection)
        }
    }

    public func recordRetries(_ outcomes: [DeliveryRecord], work: ShardWork, worker: String, leaseUntil: Int64,
                              now: Int64) throws(StoreError) -> Bool {
        try database.write { transaction in
            let connection = transaction.connection
            try Self.markDead(outcomes, work: work, now: now, connection)
            var tally = ShardTally()
            var sent: [Int64] = []
            for outcome in outcomes {
                let key: [PostgresValue] = [.integer(work.messageID), .integer(outcome.deviceID)]
                if outcome.outcome == .retrying {
                    let schedule = outcome.schedule ?? RetrySchedule(nextAt: now, expiresAt: now)
                    let ambiguous = try connection.first(
                        """
                        UPDATE delivery_retries SET attempts = attempts + 1, ambiguous = ambiguous + $3, sending = false, next_at = $4, reason = $5
                        WHERE message_id = $1 AND device_id = $2 RETURNING ambiguous
                        """, key + [.integer(outcome.ambiguous ? 1 : 0), .integer(schedule.nextAt), .text(outcome.reason ?? "Unknown")]) {
                        $0.int(0)
                    }
                    if outcome.ambiguous, ambiguous == 1 { tally.ambiguous += 1 }
                    continue
                }
                let ended = try connection.run(
                    """
                    UPDATE deliveries SET status = $3, reason = $4, created_at = $5
                    WHERE message_id = $1 AND device_id = $2 AND status = 'retrying'
                    """, key + [.text(outcome.outcome.rawValue), .optional(outcome.reason), .integer(now)])
                guard ended == 1 else { continue }
                try connection.run("DELETE FROM delivery_retries WHERE message_id = $1 AND device_id = $2", key)
                tally.retrying -= 1
                tally.count(outcome)
                if outcome.outcome == .sent { sent.append(outcome.deviceID) }
            }
            try Self.noteActivityPushes(sent, work: work, now: now, connection)
            return try tally.apply(to: work, keepingLeaseOf: worker, until: leaseUntil, connection)
        }
    }

    public func finishShard(_ work: ShardWork, worker: String, resumeAt: Int64?) throws(StoreError) -> Int64? {
        try database.write { transaction in
            let connection = transaction.connection
            guard try Self.ownsLease(work, worker: worker, connection) else { return nil }
            let nextRetry = try connection.first("SELECT min(next_at) FROM delivery_retries WHERE shard_id = $1", [.integer(work.shardID)]) {
                $0.optionalInt(0)
            } ?? nil
            guard let due = [resumeAt, nextRetry].compactMap({ $0 }).min() else {
                try connection.run("UPDATE message_shards SET status = 'done', lease_owner = NULL WHERE id = $1", [.integer(work.shardID)])
                return nil
            }
            try connection.run("UPDATE message_shards SET status = 'pending', lease_owner = NULL, due_at = $1 WHERE id = $2",
                               [.integer(due), .integer(work.shardID)])
            return due
        }
    }

    // MARK: - Shared by the writes above

    /// Marks the tokens the provider called dead: the devices' push tokens (only those tokens, since
    /// a device may have registered a new one meanwhile), or for a Live Activity message the
    /// activity tokens they went to (which then become inactive).
    static func markDead(_ outcomes: [DeliveryRecord], work: ShardWork, now: Int64, _ connection: PostgresConnection) throws {
        let dead = outcomes.filter { $0.deadToken != nil }
        guard !dead.isEmpty else { return }
        if work.spec.liveActivity != nil {
            try connection.run(
                """
                UPDATE live_activity_tokens t SET active = false, updated_at = $3 FROM unnest($1::bigint[], $2::text[]) AS u(id, token)
                WHERE t.device_id = u.id AND t.token = u.token
                """, [.integers(dead.map(\.deviceID)), .texts(dead.map(\.deadToken)), .integer(now)])
            return
        }
        try connection.run(
            """
            UPDATE devices d SET token_invalid_reason = u.reason FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(id, token, reason)
            WHERE d.id = u.id AND d.push_token = u.token
            """, [.integers(dead.map(\.deviceID)), .texts(dead.map(\.deadToken)), .texts(dead.map { $0.reason ?? "InvalidToken" })])
    }

    /// Whether the shard is still leased to `worker` and its message not deleted (a shard of a
    /// deleted message is cancelled here). Locks the shard's row until the transaction ends.
    static func ownsLease(_ work: ShardWork, worker: String, _ connection: PostgresConnection) throws -> Bool {
        guard let state = try connection.first(
            """
            SELECT s.status, s.lease_owner, m.status FROM message_shards s JOIN messages m ON m.id = s.message_id
            WHERE s.id = $1 FOR UPDATE OF s
            """, [.integer(work.shardID)], { ($0.text(0), $0.optionalText(1), $0.text(2)) }) else { return false }
        guard state.0 == ShardState.leased.rawValue, state.1 == worker else { return false }
        if state.2 == MessageState.deleted.rawValue {
            try connection.run("UPDATE message_shards SET status = 'cancelled' WHERE id = $1", [.integer(work.shardID)])
            return false
        }
        return true
    }
}

/// Writes a tally into the PostgreSQL tables.
extension ShardTally {
    /// Adds the tally to the shard's counters (whoever holds the lease: the outcomes happened) and,
    /// in the same statement, does what `PostgresCampaignStore.ownsLease` and then extending the
    /// lease would: returns whether the shard is still leased to `worker` and its message not
    /// deleted, extends the lease and notes `attemptedThrough` (see `markAttempted`) when it is, and
    /// cancels the shard when its message was deleted. One round trip instead of three.
    func apply(to work: ShardWork, keepingLeaseOf worker: String, until leaseUntil: Int64, attemptedThrough: Int64? = nil,
               _ connection: PostgresConnection) throws -> Bool {
        if !errors.isEmpty {
            let reasons = errors.keys.sorted()
            try connection.run(
                """
                INSERT INTO message_errors (message_id, reason, count)
                SELECT $1::bigint, u.reason, u.count FROM unnest($2::text[], $3::bigint[]) AS u(reason, count)
                ON CONFLICT (message_id, reason) DO UPDATE SET count = message_errors.count + excluded.count
                """, [.integer(work.messageID), .texts(reasons), .integers(reasons.map { errors[$0]! })])
        }
        return try connection.first(
            Self.update(targeted: "$1", sent: "$2", failed: "$3", throttled: "$4", retrying: "$5", ambiguous: "$6", shard: "$7",
                        worker: "$8", leaseUntil: "$9", attemptedThrough: "$10"),
            [.integer(targeted), .integer(sent), .integer(failed), .integer(throttled), .integer(retrying), .integer(ambiguous),
             .integer(work.shardID), .text(worker), .integer(leaseUntil), attemptedThrough.map(PostgresValue.integer) ?? .null]) { $0.bool(0) } ?? false
    }

    /// The UPDATE of `apply`, its values given as SQL expressions (placeholders, or columns of `from`).
    static func update(targeted: String, sent: String, failed: String, throttled: String, retrying: String, ambiguous: String,
                       shard: String, worker: String, leaseUntil: String, attemptedThrough: String, from: String? = nil) -> String {
        """
        UPDATE message_shards s SET targeted = s.targeted + \(targeted), sent = s.sent + \(sent), failed = s.failed + \(failed),
          throttled = s.throttled + \(throttled), retrying = s.retrying + \(retrying), ambiguous = s.ambiguous + \(ambiguous),
          lease_until = CASE WHEN s.status = 'leased' AND s.lease_owner = \(worker) AND m.status <> 'deleted' THEN \(leaseUntil) ELSE s.lease_until END,
          attempted_through = CASE WHEN s.status = 'leased' AND s.lease_owner = \(worker) AND m.status <> 'deleted'
            THEN greatest(s.attempted_through, \(attemptedThrough)::bigint) ELSE s.attempted_through END,
          status = CASE WHEN s.status = 'leased' AND s.lease_owner = \(worker) AND m.status = 'deleted' THEN 'cancelled' ELSE s.status END
        FROM messages m\(from.map { ", " + $0 } ?? "") WHERE s.id = \(shard) AND m.id = s.message_id
        RETURNING s.status = 'leased' AND s.lease_owner = \(worker)
        """
    }
}
