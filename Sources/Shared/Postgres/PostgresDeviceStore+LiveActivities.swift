import Core

/// Live Activity tokens on PostgreSQL.
extension PostgresDeviceStore {
    public func setActivityToken(app: String, hwid: String, attributes: DeviceAttributes, activityID: String?, token: String,
                                 now: Int64) throws(StoreError) {
        let appID = try database.appID(app)
        try database.write { transaction in
            let connection = transaction.connection
            let deviceID = try upsertDevice(connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try connection.run(
                """
                INSERT INTO live_activity_tokens (app_id, device_id, activity_id, token, active, updated_at)
                VALUES ($1, $2, $3, $4, true, $5)
                ON CONFLICT (device_id, (coalesce(activity_id, '')))
                DO UPDATE SET token = EXCLUDED.token, active = true, updated_at = EXCLUDED.updated_at
                """, [.integer(appID), .integer(deviceID), activityID.map(PostgresValue.text) ?? .null, .text(token), .integer(now)])
        }
    }

    @discardableResult
    public func deactivateActivityTokens(app: String, hwid: String, activityID: String?, now: Int64) throws(StoreError) -> Int {
        let appID = try database.appID(app)
        return try database.write { transaction in
            try transaction.connection.run(
                """
                UPDATE live_activity_tokens SET active = false, updated_at = $1
                WHERE device_id = (SELECT id FROM devices WHERE app_id = $2 AND hwid = $3) AND active
                  AND activity_id IS NOT NULL AND ($4::text IS NULL OR activity_id = $4)
                """, [.integer(now), .integer(appID), .text(hwid), activityID.map(PostgresValue.text) ?? .null])
        }
    }

    public func activityTokens(app: String, hwid: String) throws(StoreError) -> [LiveActivityToken] {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.rows(
                """
                SELECT d.hwid, t.activity_id, t.token, t.active, t.last_timestamp
                FROM live_activity_tokens t JOIN devices d ON d.id = t.device_id
                WHERE d.app_id = $1 AND d.hwid = $2 ORDER BY t.activity_id IS NOT NULL, t.activity_id COLLATE "C"
                """, [.integer(appID), .text(hwid)]
            ) { row in
                LiveActivityToken(hwid: row.text(0), activityID: row.optionalText(1), token: row.text(2), active: row.bool(3),
                                  lastTimestamp: row.optionalInt(4))
            }
        }
    }
}
