import Core

/// Live Activity tokens on SQLite.
extension SQLiteDeviceStore {
    public func setActivityToken(app: String, hwid: String, attributes: DeviceAttributes, activityID: String?, token: String,
                                 now: Int64) throws(StoreError) {
        let appID = try appID(app)
        try write { writer in
            let connection = writer.connection
            let deviceID = try upsertDevice(connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            let activity: SQLiteValue = activityID.map(SQLiteValue.text) ?? .null
            // One writer at a time, so the update-or-insert cannot race.
            try connection.prepare(
                "UPDATE live_activity_tokens SET token = ?, active = 1, updated_at = ? WHERE device_id = ? AND activity_id IS ?"
            ).run([.text(token), .integer(now), .integer(deviceID), activity])
            guard connection.changes == 0 else { return }
            try connection.prepare(
                """
                INSERT INTO live_activity_tokens (app_id, device_id, activity_id, token, active, updated_at)
                VALUES (?, ?, ?, ?, 1, ?)
                """
            ).run([.integer(appID), .integer(deviceID), activity, .text(token), .integer(now)])
        }
    }

    @discardableResult
    public func deactivateActivityTokens(app: String, hwid: String, activityID: String?, now: Int64) throws(StoreError) -> Int {
        let appID = try appID(app)
        return try write { writer in
            try writer.connection.prepare(
                """
                UPDATE live_activity_tokens SET active = 0, updated_at = ?1
                WHERE device_id = (SELECT id FROM devices WHERE app_id = ?2 AND hwid = ?3) AND active = 1
                  AND activity_id IS NOT NULL AND (?4 IS NULL OR activity_id = ?4)
                """
            ).run([.integer(now), .integer(appID), .text(hwid), activityID.map(SQLiteValue.text) ?? .null])
            return writer.connection.changes
        }
    }

    public func activityTokens(app: String, hwid: String) throws(StoreError) -> [LiveActivityToken] {
        let appID = try appID(app)
        return try read { connection in
            try connection.prepare(
                """
                SELECT d.hwid, t.activity_id, t.token, t.active, t.last_timestamp
                FROM live_activity_tokens t JOIN devices d ON d.id = t.device_id
                WHERE d.app_id = ? AND d.hwid = ? ORDER BY t.activity_id IS NOT NULL, t.activity_id
                """
            ).rows([.integer(appID), .text(hwid)]) { row in
                LiveActivityToken(hwid: row.text(0), activityID: row.optionalText(1), token: row.text(2), active: row.int(3) != 0,
                                  lastTimestamp: row.optionalInt(4))
            }
        }
    }
}
