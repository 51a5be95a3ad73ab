/// The funnels of an application's messages over a period, added up (the dashboard's cards). Delivery
/// and open reports count once the workers have matched them to their message (within seconds), and
/// only from devices the message was sent to, as in each message's funnel.
public struct CampaignTotals: Sendable, Equatable {
    public var messages: Int
    public var sent: Int
    public var delivered: Int
    public var opened: Int

    public init(messages: Int = 0, sent: Int = 0, delivered: Int = 0, opened: Int = 0) {
        self.messages = messages
        self.sent = sent
        self.delivered = delivered
        self.opened = opened
    }

    /// The query both backends run (`$1` the application's id, `$2` the period's start): a
    /// message's delivered and opened count only reports from devices it was sent to.
    package static let query = """
        SELECT count(*), coalesce(sum(sent), 0), coalesce(sum(delivered), 0), coalesce(sum(opened), 0) FROM (
          SELECT (SELECT sum(s.sent) FROM message_shards s WHERE s.message_id = m.id) AS sent,
            (SELECT count(*) FROM message_reports r JOIN deliveries x ON x.message_id = r.message_id AND x.device_id = r.device_id
              AND x.status = 'sent' WHERE r.message_id = m.id AND r.kind = 'delivery') AS delivered,
            (SELECT count(*) FROM message_reports r JOIN deliveries x ON x.message_id = r.message_id AND x.device_id = r.device_id
              AND x.status = 'sent' WHERE r.message_id = m.id AND r.kind = 'push_stat') AS opened
          FROM messages m WHERE m.app_id = $1 AND m.created_at >= $2) AS funnels
        """

    /// The totals from `query`'s row.
    package init(row: some StoredRow) {
        self.init(messages: Int(row.int(0)), sent: Int(row.int(1)), delivered: Int(row.int(2)), opened: Int(row.int(3)))
    }
}
