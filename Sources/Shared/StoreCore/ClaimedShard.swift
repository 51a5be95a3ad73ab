import Core

/// A shard's row as a worker claims it, with its message: what `claimShard` checks (state, owner,
/// whether the message was deleted) and the `ShardWork` it hands out.
struct ClaimedShard {
    /// The columns of `message_shards s JOIN messages m` that `init(row:)` reads, in its order.
    static let columns = """
        s.message_id, s.first_device, s.last_device, s.by_timezone, s.timezone_offset, s.status, s.lease_owner, \
        s.attempts, m.code, m.hash, m.app_id, m.request, m.status, s.attempted_through
        """

    let message: Int64
    let first: Int64
    let last: Int64
    let byTimezone: Bool
    let offset: Int64?
    let status: String
    let owner: String?
    let attempts: Int
    let code: String
    let hash: String
    let appID: Int64
    let request: String
    let messageStatus: String
    let attemptedThrough: Int64?

    init(row: some StoredRow) {
        (message, first, last, byTimezone, offset) = (row.int(0), row.int(1), row.int(2), row.bool(3), row.optionalInt(4))
        (status, owner, attempts) = (row.text(5), row.optionalText(6), Int(row.int(7)))
        (code, hash, appID, request) = (row.text(8), row.text(9), row.int(10), row.text(11))
        (messageStatus, attemptedThrough) = (row.text(12), row.optionalInt(13))
    }

    /// Whether `worker` holds the shard's lease.
    func isLeased(to worker: String) -> Bool { status == ShardState.leased.rawValue && owner == worker }

    /// Whether its message was deleted (the shard is then cancelled instead of sent).
    var messageDeleted: Bool { messageStatus == MessageState.deleted.rawValue }

    /// The work of shard `shard`, whose application has the code `app`. A shard attempted before
    /// resumes after the devices its earlier attempts went through.
    func work(shard: Int64, app: String) throws -> ShardWork {
        ShardWork(shardID: shard, messageID: message, messageCode: code, hash: hash, app: app, appID: appID,
                  spec: try MessageSpec(storedText: request), firstDevice: first, lastDevice: last,
                  timezoneFilter: byTimezone ? .some(offset) : .none, attempts: attempts,
                  attemptedThrough: attempts > 1 ? attemptedThrough : nil)
    }
}
