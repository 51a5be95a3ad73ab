/// The opt-in history of one UTC day and app version (the push primer's analytics): how many
/// devices registered, and how many permission changes went each way. A device's first
/// registration counts in `registered` and in `optedIn` or `optedOut`, by the state it came with.
public struct OptInCount: Sendable, Equatable {
    /// The start of the day (unix seconds, UTC).
    public var day: Int64
    /// The app version the device reported when its state changed (nil: none reported).
    public var appVersion: String?
    public var registered: Int
    public var optedIn: Int
    public var optedOut: Int

    public init(day: Int64, appVersion: String?, registered: Int, optedIn: Int, optedOut: Int) {
        self.day = day
        self.appVersion = appVersion
        self.registered = registered
        self.optedIn = optedIn
        self.optedOut = optedOut
    }
}
