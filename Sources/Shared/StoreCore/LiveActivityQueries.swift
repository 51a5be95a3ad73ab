import Core

/// The Live Activities of messages, as both backends store them: each activity's row in
/// `live_activities` (its last `aps.timestamp`, its end).
package enum LiveActivityQueries {
    /// Advances the activity of a Live Activity message and returns the message's spec with its
    /// `aps.timestamp`; throws `LiveActivityRefusal.error` for an update or end of an unknown or
    /// ended activity. Runs inside `createMessages`' transaction; the upsert holds the activity's
    /// row until it commits, so concurrent messages of one activity get increasing timestamps.
    package static func advance(_ message: NewMessage, appID: Int64, now: Int64, _ connection: some StatementRunner) throws -> MessageSpec {
        guard let activity = message.spec.liveActivity else { return message.spec }
        if activity.event != .start {
            let (registered, active) = try connection.selectFirst(
                "SELECT count(*), count(CASE WHEN active THEN 1 END) FROM live_activity_tokens WHERE app_id = $1 AND activity_id = $2",
                [.integer(appID), .text(activity.id)]
            ) { ($0.int(0), $0.int(1)) } ?? (0, 0)
            if let refusal = LiveActivityRefusal(registeredTokens: registered, activeTokens: active) { throw refusal.error(for: message) }
        }
        // A start (re)opens the activity; an update or end changes it only while it is open.
        guard let timestamp = try connection.selectFirst(
            """
            INSERT INTO live_activities (app_id, activity_id, last_timestamp, ended_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (app_id, activity_id) DO UPDATE
              SET last_timestamp = \(connection.greatest)(excluded.last_timestamp, live_activities.last_timestamp + 1), ended_at = excluded.ended_at
              WHERE $5 = 1 OR live_activities.ended_at IS NULL
            RETURNING last_timestamp
            """, [.integer(appID), .text(activity.id), .integer(now), activity.event == .end ? .integer(now) : .null,
                  .integer(activity.event == .start ? 1 : 0)], { $0.int(0) }
        ) else { throw LiveActivityRefusal.ended.error(for: message) }
        return message.spec(timestamp: timestamp)
    }
}
