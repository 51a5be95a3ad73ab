/// What the SDKs reported for one application in a time window
/// (`GET /api/v1/apps/<code>/events?from=&to=`).
public struct EventStatistics: Sendable, Equatable {
    public struct Event: Sendable, Equatable {
        public var name: String
        public var count: Int
        /// Distinct devices (hwids) that sent it.
        public var devices: Int
    }

    public struct Screen: Sendable, Equatable {
        public var name: String
        public var count: Int
    }

    public struct Day: Sendable, Equatable {
        /// `yyyy-MM-dd` (UTC).
        public var day: String
        public var events: Int
        public var devices: Int
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

/// Reads event statistics. Implemented by `SQLiteAnalyticsStore`.
public protocol AnalyticsStore: Sendable {
    /// Reports whose `timestampUTC` (or, when absent, arrival time) is in `[from, to)`.
    func eventStatistics(app: String, from: Int64, to: Int64) throws(StoreError) -> EventStatistics
}
