/// The message outbox and the shard lifecycle behind campaigns. Ingest creates messages and
/// dispatches shards; workers claim shards, resolve their devices page by page and record each
/// batch of outcomes. The store is the source of truth: a shard whose worker vanished is leased
/// again, and a push that failed for a transient reason waits in it for its next attempt (the
/// shard goes back to `pending`, due when the earliest retry is). Each concern is a protocol of its
/// own, and a caller takes the narrowest it needs; a backend's campaign store conforms to all of them.
public protocol CampaignStore: MessageStore, CampaignStatisticsStore, DispatcherRoleStore, ShardLeaseStore, ShardStore,
                               RetryStore, RetentionStore, InboxStore {}
