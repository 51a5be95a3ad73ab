/// What the SDKs reported for one application in a time window
/// (`GET /api/v1/apps/<code>/events?from=&to=`).
public struct EventStatistics: Sendable, Equatable {
    public struct Event: Sendable, Equatable {
        public var name: String
        public var count: Int
        /// Distinct devices (hwids) that sent it; never above `count`.
        public var devices: Int

        /// `devices` is capped at `count`: past the sketch's exact range it is an estimate that can
        /// overshoot, and no event has more senders than occurrences.
        package init(name: String, count: Int, devices: Int) {
            self.name = name
            self.count = count
            self.devices = min(devices, count)
        }
    }

    public struct Screen: Sendable, Equatable {
        public var name: String
        public var count: Int

        package init(name: String, count: Int) {
            self.name = name
            self.count = count
        }
    }

    public struct Day: Sendable, Equatable {
        /// `yyyy-MM-dd` (UTC).
        public var day: String
        public var events: Int
        public var devices: Int

        package init(day: String, events: Int, devices: Int) {
            self.day = day
            self.events = events
            self.devices = devices
        }
    }

    public var events: [Event] = []
    /// From PW_ScreenOpen's `screen_name`.
    public var screens: [Screen] = []
    /// PW_UserIdle and PW_ApplicationExit reports carrying `session_duration`.
    public var sessions = 0
    public var averageSessionSeconds: Double?
    /// From PW_UserIdle's `idle_seconds`.
    public var averageIdleSeconds: Double?
    /// PW_InAppPurchase events and setPurchase calls.
    public var purchases = 0
    /// Amount per currency (`__amount`/`amount` and `__currency`/`currency`, or `price` × `quantity`).
    public var revenue: [String: Double] = [:]
    public var days: [Day] = []

    public init() {}
}

/// Where report processing stands: ids up to `last` are stored; `firstUnprocessed` is the oldest
/// not yet folded into the statistics (nil: none).
public struct ReportBacklog: Sendable, Equatable {
    public var firstUnprocessed: Int64?
    public var last: Int64

    public init(firstUnprocessed: Int64?, last: Int64) {
        self.firstUnprocessed = firstUnprocessed
        self.last = last
    }

    /// Reports not processed yet, counted by id span (an upper bound).
    public var pending: Int64 { firstUnprocessed.map { last - $0 + 1 } ?? 0 }
}

/// Turns stored SDK reports into statistics. Each store backend implements it.
public protocol AnalyticsStore: Sendable {
    /// Reports whose `timestampUTC` (or, when absent, arrival time) is in `[from, to)`, counting
    /// every acknowledged report whether or not it has been processed yet.
    func eventStatistics(app: String, from: Int64, to: Int64) throws(StoreError) -> EventStatistics
    func reportBacklog() throws(StoreError) -> ReportBacklog
    /// What the device rows tell of `[from, to)`, per minute: `install` and `register` (devices
    /// first registered, `register` those with a push token), `open` (devices whose latest
    /// applicationOpen fell then) and `unregister` (devices whose token was removed or that
    /// unsubscribed, by their last change).
    func applicationActivity(app: String, from: Int64, to: Int64) throws(StoreError) -> [ActivityCount]
    /// The opt-in history of `[from, to)`, per UTC day and app version, ordered by day then version
    /// (nil first). A device is opted in while it has a push token, is subscribed and its
    /// `notificationTypes` is not 0; one change of that state is one count, however often it registers.
    func optIns(app: String, from: Int64, to: Int64) throws(StoreError) -> [OptInCount]
    /// Folds the unprocessed reports with ids in `(first, last]` into the statistics, in one
    /// transaction; returns how many it processed (0 when another worker already did) and how many
    /// of them it set aside.
    func processReports(after first: Int64, through last: Int64, now: Int64) throws(StoreError) -> ReportsProcessed
    /// Deletes up to `limit` processed reports received before `before` (their counts are in the
    /// rollups); returns how many went.
    func pruneReports(receivedBefore before: Int64, limit: Int) throws(StoreError) -> Int
}
