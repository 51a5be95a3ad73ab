import Core

/// A `CampaignStore` on a SQL backend: the Remote API's message calls, the inbox, the Live
/// Activities of messages and claiming a shard are implemented here once, over the backend's
/// `database`; the backend supplies the statement that differs, and the rest of the shard
/// lifecycle (activation, leases, pages, outcomes) with its own locking.
public protocol SQLCampaignStore: CampaignStore {
    associatedtype Database: SQLDatabase

    var database: Database { get }

    /// Counts a message's devices that reported a kind (see `MessageQueries.status`).
    static var reportedDevices: String { get }
}

extension SQLCampaignStore {
    public func createMessages(app: String, _ messages: [NewMessage], now: Int64) throws(StoreError) -> [String] {
        let appID = try database.appID(app)
        let encoded = try NewMessage.storedTexts(messages)
        return try database.writing { connection in
            try MessageQueries.create(messages, encoded: encoded, appID: appID, now: now, connection) { message in
                try LiveActivityQueries.advance(message, appID: appID, now: now, connection)
            }
        }
    }

    public func unknownDevices(app: String, _ devices: [String]) throws(StoreError) -> [String] {
        guard !devices.isEmpty else { return [] }
        let appID = try database.appID(app)
        return try database.readingSnapshot { connection in
            try connection.select(
                """
                SELECT e.entry FROM \(connection.entries(of: "$2"))
                WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.app_id = $1 AND d.hwid = e.entry)
                  AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.app_id = $1 AND d.push_token IS NOT NULL
                                  AND \(connection.tokenPrefix("d.push_token")) = \(connection.tokenPrefix("e.entry")) AND d.push_token = e.entry)
                ORDER BY e.position
                """, [.integer(appID), .textList(devices)]) { $0.text(0) }
        }
    }

    public func messageStatus(app: String?, code: String) throws(StoreError) -> MessageStatus? {
        let appFilter = try app.map { (code: String) throws(StoreError) in try database.appID(code) }
        return try database.readingSnapshot { connection in
            try MessageQueries.status(code: code, appFilter: appFilter, appCode: database.appCode, reports: Self.reportedDevices, connection)
        }
    }

    public func recentMessages(app: String, limit: Int, offset: Int) throws(StoreError) -> [MessageStatus] {
        let appID = try database.appID(app)
        let codes = try database.reading { try MessageQueries.recentCodes(appID: appID, limit: limit, offset: offset, $0) }
        var result: [MessageStatus] = []
        for code in codes {
            if let status = try messageStatus(app: app, code: code) { result.append(status) }
        }
        return result
    }

    public func messageCount(app: String) throws(StoreError) -> Int {
        let appID = try database.appID(app)
        return try database.reading { try MessageQueries.count(appID: appID, $0) }
    }

    public func campaignTotals(app: String, since: Int64) throws(StoreError) -> CampaignTotals {
        let appID = try database.appID(app)
        return try database.reading { try MessageQueries.totals(appID: appID, since: since, $0) }
    }

    public func deleteMessage(app: String, code: String, now: Int64) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.writing { try MessageQueries.delete(appID: appID, code: code, now: now, $0) }
    }

    public func tagTypes(app: String) throws(StoreError) -> [String: TagType] {
        let appID = try database.appID(app)
        return try database.reading { try MessageQueries.tagTypes(appID: appID, $0) }
    }
    public func messageActivity(code: String) throws(StoreError) -> [ActivityCount] {
        try database.readingSnapshot { connection in
            guard let (id, appID, hash) = try connection.selectFirst("SELECT id, app_id, hash FROM messages WHERE code = $1", [.text(code)], {
                ($0.int(0), $0.int(1), $0.text(2))
            }) else { return [] }
            return try connection.select(
                """
                SELECT created_at / 60 * 60 AS minute, 'send' AS action, count(*) FROM deliveries WHERE message_id = $1 AND status = 'sent'
                GROUP BY minute
                UNION ALL
                SELECT first / 60 * 60 AS minute, CASE kind WHEN 'delivery' THEN 'delivery' ELSE 'open' END, count(*) FROM (
                  SELECT kind, min(occurred_at) AS first FROM reports WHERE hash = $2 AND app_id = $3 AND kind IN ('delivery', 'push_stat')
                  GROUP BY kind, hwid) AS firsts
                GROUP BY minute, kind
                ORDER BY 1, 2
                """, [.integer(id), .text(hash), .integer(appID)]) { ActivityCount(minute: $0.int(0), action: $0.text(1), count: Int($0.int(2))) }
        }
    }

    // MARK: Shard leases

    /// Locks the shard's row (not its message's) until the claim commits, so that the lease sweeper
    /// and other workers wait for it or skip it.
    public func claimShard(_ shard: Int64, worker: String, leaseUntil: Int64, now: Int64) throws(StoreError) -> ShardWork? {
        try database.writing { connection -> ShardWork? in
            guard let claimed = try connection.selectFirst(
                """
                SELECT \(ClaimedShard.columns)
                FROM message_shards s JOIN messages m ON m.id = s.message_id WHERE s.id = $1\(connection.lockForUpdate(of: "s"))
                """, [.integer(shard)], { ClaimedShard(row: $0) }) else { return nil }
            guard claimed.isLeased(to: worker) else { return nil }
            guard !claimed.messageDeleted else {
                try connection.execute("UPDATE message_shards SET status = 'cancelled' WHERE id = $1", [.integer(shard)])
                return nil
            }
            try connection.execute("UPDATE message_shards SET lease_until = $1 WHERE id = $2", [.integer(leaseUntil), .integer(shard)])
            if claimed.attempts > 1 {
                // Retries the previous holder had on the network: their outcome is unknown.
                try connection.execute(
                    """
                    UPDATE message_shards SET ambiguous = ambiguous
                      + (SELECT count(*) FROM delivery_retries WHERE shard_id = $1 AND sending AND ambiguous = 0) WHERE id = $1
                    """, [.integer(shard)])
                try connection.execute(
                    "UPDATE delivery_retries SET sending = false, ambiguous = ambiguous + 1, next_at = $2 WHERE shard_id = $1 AND sending",
                    [.integer(shard), .integer(now)])
            }
            return try claimed.work(shard: shard, app: database.appCode(claimed.appID) ?? "")
        }
    }

    public func leasedShardCounts() throws(StoreError) -> [String: Int] {
        try database.reading { connection in
            var counts: [String: Int] = [:]
            for (owner, count) in try connection.select(
                "SELECT lease_owner, count(*) FROM message_shards WHERE status = 'leased' GROUP BY lease_owner", [], {
                    ($0.text(0), Int($0.int(1)))
                }) {
                counts[owner] = count
            }
            return counts
        }
    }

    public func releaseLease(shard: Int64, worker: String) throws(StoreError) {
        _ = try database.writing { connection in
            try connection.execute(
                "UPDATE message_shards SET status = 'pending', lease_owner = NULL WHERE id = $1 AND lease_owner = $2 AND status = 'leased'",
                [.integer(shard), .text(worker)])
        }
    }

    public func completeMessages(now: Int64) throws(StoreError) -> Int {
        try database.writing { connection in
            try connection.execute(
                """
                UPDATE messages SET status = 'done', updated_at = $1 WHERE status = 'sending' AND NOT EXISTS (
                  SELECT 1 FROM message_shards s WHERE s.message_id = messages.id AND s.status IN ('pending', 'leased'))
                """, [.integer(now)])
        }
    }
}

/// An `AnalyticsStore` on a SQL backend: the reads that do not depend on it.
public protocol SQLAnalyticsStore: AnalyticsStore {
    associatedtype Database: SQLDatabase

    var database: Database { get }
}

extension SQLAnalyticsStore {
    public func applicationActivity(app: String, from: Int64, to: Int64) throws(StoreError) -> [ActivityCount] {
        let appID = try database.appID(app)
        return try database.readingSnapshot { try AnalyticsQueries.applicationActivity($0, appID: appID, from: from, to: to) }
    }

    public func optIns(app: String, from: Int64, to: Int64) throws(StoreError) -> [OptInCount] {
        let appID = try database.appID(app)
        return try database.readingSnapshot { try AnalyticsQueries.optIns($0, appID: appID, from: from, to: to) }
    }
}
