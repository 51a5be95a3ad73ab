/// What `AnalyticsStore.processReports` did with a range of reports.
public struct ReportsProcessed: Sendable, Equatable {
    /// Reports it marked processed (0 when another worker already had).
    public var count: Int
    /// Of those, reports set aside: the database refused a value they count (PostgreSQL only),
    /// so they are marked processed but left out of the statistics.
    public var setAside: Int

    public init(count: Int, setAside: Int = 0) {
        self.count = count
        self.setAside = setAside
    }
}
