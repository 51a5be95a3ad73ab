import Core

/// Live Activities on PostgreSQL: the activity tokens a push was sent through (`LiveActivityQueries`
/// advances each activity's row when a message is created).
extension PostgresCampaignStore {
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
