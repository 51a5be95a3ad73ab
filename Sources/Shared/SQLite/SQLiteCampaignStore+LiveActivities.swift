import Core

/// Live Activities on SQLite: each activity's row (`aps.timestamp`, end), advanced when a message
/// is created, and the activity tokens a push was sent through.
extension SQLiteCampaignStore {
    /// Advances the activity of a Live Activity message and returns the message's spec with its
    /// `aps.timestamp`; throws `LiveActivityRefusal.error` for an update or end of an unknown or
    /// ended activity. Runs on the writer, inside `createMessages`' transaction.
    public static func advanceActivity(_ message: NewMessage, appID: Int64, now: Int64, _ connection: SQLiteConnection) throws -> MessageSpec {
        guard let activity = message.spec.liveActivity else { return message.spec }
        let key: [SQLiteValue] = [.integer(appID), .text(activity.id)]
        if activity.event != .start {
            let (registered, active) = try connection.prepare(
                "SELECT count(*), coalesce(sum(active), 0) FROM live_activity_tokens WHERE app_id = ? AND activity_id = ?"
            ).first(key) { ($0.int(0), $0.int(1)) } ?? (0, 0)
            if let refusal = LiveActivityRefusal(registeredTokens: registered, activeTokens: active) { throw refusal.error(for: message) }
        }
        // A start (re)opens the activity; an update or end changes it only while it is open.
        guard let timestamp = try connection.prepare(
            """
            INSERT INTO live_activities (app_id, activity_id, last_timestamp, ended_at) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (app_id, activity_id) DO UPDATE
              SET last_timestamp = max(excluded.last_timestamp, live_activities.last_timestamp + 1), ended_at = excluded.ended_at
              WHERE ?5 OR live_activities.ended_at IS NULL
            RETURNING last_timestamp
            """
        ).first(key + [.integer(now), activity.event == .end ? .integer(now) : .null, .integer(activity.event == .start ? 1 : 0)], {
            $0.int(0)
        }) else { throw LiveActivityRefusal.ended.error(for: message) }
        return message.spec(timestamp: timestamp)
    }

    /// Notes the pushes of a Live Activity message recorded as sent: each token keeps the
    /// `aps.timestamp` it was sent, and after an end the activity's tokens of those devices become
    /// inactive, so a retry or a later update no longer goes to them.
    static func noteActivityPushes(_ devices: [Int64], work: ShardWork, now: Int64, _ connection: SQLiteConnection) throws {
        guard let activity = work.spec.liveActivity, !devices.isEmpty else { return }
        try connection.prepare(
            """
            UPDATE live_activity_tokens SET last_timestamp = max(coalesce(last_timestamp, ?1), ?1), active = active AND NOT ?2, updated_at = ?3
            WHERE device_id IN (SELECT value FROM json_each(?4)) AND coalesce(activity_id, '') = ?5
            """
        ).run([.integer(activity.timestamp), .integer(activity.event == .end ? 1 : 0), .integer(now),
               .text(JSON.array(devices.map { JSON.int($0) }).text), .text(activity.tokenActivityID)])
    }
}
