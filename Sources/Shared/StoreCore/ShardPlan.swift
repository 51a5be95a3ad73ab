import Core

/// One shard of a message: a range of device ids, and for a message sent in each device's time
/// zone, the UTC offset its devices have.
package struct ShardRange: Sendable, Equatable {
    package var first: Int64
    package var last: Int64
    /// Whether the shard is restricted to devices with `timezoneOffset` (nil: devices without one).
    package var byTimezone: Bool
    package var timezoneOffset: Int64?
    package var dueAt: Int64
}

/// How a message that has come due is cut into shards, on every backend.
package enum ShardPlan {
    /// The smallest shard a campaign is cut into (device ids).
    package static let minimumShard: Int64 = 1_000

    /// The shards of message `spec` of application `appID`, none when the application has no
    /// devices. The app's device ids are cut into ranges of at most `shardSize` ids; a campaign to
    /// tags or everyone is cut into at least 16 while each still holds `minimumShard` ids, so that
    /// several workers share it, while one to listed users or devices is one range. A message sent
    /// in each device's time zone has the ranges once per UTC offset its devices have, each due
    /// when the send time comes in that zone.
    package static func shards(of spec: MessageSpec, appID: Int64, shardSize: Int, _ connection: some StatementRunner) throws -> [ShardRange] {
        guard let (low, high) = try connection.selectFirst("SELECT min(id), max(id) FROM devices WHERE app_id = $1", [.integer(appID)], { row in
            row.optionalInt(0).flatMap { low in row.optionalInt(1).map { (low, $0) } }
        }) ?? nil else { return [] }
        let explicit = spec.users != nil || spec.devices != nil
        let span = high - low + 1
        let step = explicit ? span : min(Int64(shardSize), max(minimumShard, (span + 15) / 16))
        var groups: [(byTimezone: Bool, offset: Int64?, dueAt: Int64)] = [(false, nil, spec.schedule.sendAt)]
        if spec.schedule.perDeviceTimezone {
            groups = try connection.select("SELECT DISTINCT timezone_offset FROM devices WHERE app_id = $1", [.integer(appID)]) { row in
                let offset = row.optionalInt(0)
                return (true, offset, spec.schedule.dueAt(timezoneOffset: offset))
            }
        }
        var shards: [ShardRange] = []
        for group in groups {
            var first = low
            while first <= high {
                let last = min(high, first + step - 1)
                shards.append(ShardRange(first: first, last: last, byTimezone: group.byTimezone, timezoneOffset: group.offset, dueAt: group.dueAt))
                first = last + 1
            }
        }
        return shards
    }
}
