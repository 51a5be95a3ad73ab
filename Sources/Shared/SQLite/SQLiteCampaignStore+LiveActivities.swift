import Core

/// Live Activities on SQLite: the activity tokens a push was sent through (`LiveActivityQueries`
/// advances each activity's row when a message is created).
extension SQLiteCampaignStore {
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
