import Core

/// Live Activities on PostgreSQL: each activity's row (`aps.timestamp`, end), advanced when a
/// message is created, and the activity tokens a push was sent through.
extension PostgresCampaignStore {
    /// Advances the activity of a Live Activity message and returns the message's spec with its
    /// `aps.timestamp`; throws `LiveActivityRefusal.error` for an update or end of an unknown or
    /// ended activity. Runs inside `createMessages`' transaction; the upsert locks the activity's
    /// row until it commits, so concurrent messages of one activity get increasing timestamps.
    public static func advanceActivity(_ message: NewMessage, appID: Int64, now: Int64, _ connection: PostgresConnection) throws -> MessageSpec {
        guard let activity = message.spec.liveActivity else { return message.spec }
        let key: [PostgresValue] = [.integer(appID), .text(activity.id)]
        if activity.event != .start {
            let (registered, active) = try connection.first(
                "SELECT count(*), count(*) FILTER (WHERE active) FROM live_activity_tokens WHERE app_id = $1 AND activity_id = $2", key
            ) { ($0.int(0), $0.int(1)) } ?? (0, 0)
            if let refusal = LiveActivityRefusal(registeredTokens: registered, activeTokens: active) { throw refusal.error(for: message) }
        }
        // A start (re)opens the activity; an update or end changes it only while it is open.
        guard let timestamp = try connection.first(
            """
            INSERT INTO live_activities (app_id, activity_id, last_timestamp, ended_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (app_id, activity_id) DO UPDATE
              SET last_timestamp = greatest(EXCLUDED.last_timestamp, live_activities.last_timestamp + 1), ended_at = EXCLUDED.ended_at
              WHERE $5::boolean OR live_activities.ended_at IS NULL
            RETURNING last_timestamp
            """, key + [.integer(now), activity.event == .end ? .integer(now) : .null, .boolean(activity.event == .start)], {
                $0.int(0)
            }) else { throw LiveActivityRefusal.ended.error(for: message) }
        return message.spec(timestamp: timestamp)
    }

    /// Notes the pushes of a Live Activity message recorded as sent: each token keeps the
    /// `aps.timestamp` it was sent, and after an end the activity's tokens of those devices become
    /// inactive, so a retry or a later update no longer goes to them.
    static func noteActivityPushes(_ devices: [Int64], work: ShardWork, now: Int64, _ connection: PostgresConnection) throws {
        guard let activity = work.spec.liveActivity, !devices.isEmpty else { return }
        try connection.run(
            """
            UPDATE live_activity_tokens SET last_timestamp = greatest(last_timestamp, $1), active = active AND NOT $2::boolean, updated_at = $3
            WHERE device_id = ANY($4::bigint[]) AND coalesce(activity_id, '') = $5
            """, [.integer(activity.timestamp), .boolean(activity.event == .end), .integer(now), .integers(devices), .text(activity.tokenActivityID)])
    }
}
