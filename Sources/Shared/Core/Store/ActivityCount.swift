/// How often something happened in one minute, for the Remote API's statistics (`getResults`).
public struct ActivityCount: Sendable, Equatable {
    /// The start of the minute (unix seconds, UTC).
    public var minute: Int64
    /// `send`, `delivery`, `open` (a message) or `open`, `install`, `register`, `unregister` (an application).
    public var action: String
    public var count: Int

    public init(minute: Int64, action: String, count: Int) {
        self.minute = minute
        self.action = action
        self.count = count
    }
}
