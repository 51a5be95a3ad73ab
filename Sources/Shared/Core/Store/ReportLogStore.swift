/// The log of SDK reports (events, opens, deliveries) as received, before statistics fold them in.
public protocol ReportLogStore: Sendable {
    /// Durably records SDK reports (events, opens, deliveries) as received.
    func record(_ reports: [SDKReport], now: Int64) throws(StoreError)

    /// Reports recorded for an application, oldest first (for tests and the analytics pipeline).
    func reports(app: String, limit: Int) throws(StoreError) -> [SDKReport]
}
