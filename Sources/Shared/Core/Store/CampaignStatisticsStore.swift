/// What the campaign pipeline has done and holds, for the Remote API's statistics, the dashboard
/// and `/metrics`. Reads only.
public protocol CampaignStatisticsStore: Sendable {
    /// A message's pushes sent (`send`, from its delivery rows) and its devices' first delivery and
    /// open reports (`delivery`, `open`), per minute.
    func messageActivity(code: String) throws(StoreError) -> [ActivityCount]

    /// The funnels of the application's messages created at or after `since`, added up.
    func campaignTotals(app: String, since: Int64) throws(StoreError) -> CampaignTotals

    /// Messages and shards by status, and pushes of unfinished messages waiting for a retry (the
    /// queue depth on `/metrics`).
    func queueDepth() throws(StoreError) -> QueueDepth
}

/// What waits in the campaign pipeline.
public struct QueueDepth: Sendable {
    /// Unfinished messages by status.
    public var messages: [String: Int]
    /// Pending and leased shards.
    public var shards: [String: Int]
    /// Pushes waiting for a retry.
    public var retrying: Int

    public init(messages: [String: Int], shards: [String: Int], retrying: Int) {
        self.messages = messages
        self.shards = shards
        self.retrying = retrying
    }
}
