/// Where a message is in its life, as the funnel (`GET /api/v1/messages/<code>`) and `/metrics` name it.
public enum MessageState: String, Sendable, CaseIterable {
    /// Accepted, with a send date still to come.
    case scheduled
    /// Due, waiting for ingest to cut it into shards.
    case queued
    /// Shards exist and workers are sending them, or pushes wait for a retry:
    /// `targeted = sent + failed + throttled + retrying`.
    case sending
    /// Every shard finished and no retry is left: `targeted = sent + failed + throttled`.
    case done
    /// Cancelled by deleteMessage; nothing further leaves.
    case deleted
    case failed
}

/// Where one shard of a campaign is: waiting for a worker, leased to one, finished, or cancelled
/// with its deleted message.
public enum ShardState: String, Sendable, CaseIterable {
    case pending, leased, done, cancelled
}
