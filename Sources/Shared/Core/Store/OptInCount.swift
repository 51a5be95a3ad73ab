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

    /// The query both backends run (`$1` the application's id, `[$2, $3)` the window).
    package static let query = """
        SELECT at / 86400 * 86400 AS day, app_version, count(*) FILTER (WHERE registered),
          count(*) FILTER (WHERE opted_in), count(*) FILTER (WHERE NOT opted_in)
        FROM permission_changes WHERE app_id = $1 AND at >= $2 AND at < $3
        GROUP BY day, app_version
        """

    /// Whether `self` lists before `other`: by day, then app version in byte order (none first).
    /// The stores sort `query`'s rows with it rather than in SQL, where PostgreSQL would order the
    /// versions by its database's collation ("1.0-Beta" after "1.0-alpha" in en-US, before it here).
    package func precedes(_ other: OptInCount) -> Bool {
        if day != other.day { return day < other.day }
        switch (appVersion, other.appVersion) {
        case (nil, nil), (_, nil): return false
        case (nil, _): return true
        case (let mine?, let theirs?): return mine.utf8.lexicographicallyPrecedes(theirs.utf8)
        }
    }

    /// One day and version from `query`'s row.
    package init(row: some StoredRow) {
        self.init(day: row.int(0), appVersion: row.optionalText(1), registered: Int(row.int(2)), optedIn: Int(row.int(3)),
                  optedOut: Int(row.int(4)))
    }
}
