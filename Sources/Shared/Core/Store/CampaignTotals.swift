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
}
