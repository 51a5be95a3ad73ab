import Core

/// A `CampaignStore` on a SQL backend: the Remote API's message calls are implemented here once,
/// over the backend's `database`; the backend supplies the statement that differs.
public protocol SQLCampaignStore: CampaignStore {
    associatedtype Database: SQLDatabase

    var database: Database { get }

    /// Counts a message's devices that reported a kind (see `MessageQueries.status`).
    static var reportedDevices: String { get }

    /// Advances the activity of a Live Activity message and returns the spec to store; throws
    /// `LiveActivityRefusal.error` for an update or end of an unknown or ended activity. Runs in
    /// `createMessages`' transaction.
    static func advanceActivity(_ message: NewMessage, appID: Int64, now: Int64, _ connection: Database.Connection) throws -> MessageSpec
}

extension SQLCampaignStore {
    public func createMessages(app: String, _ messages: [NewMessage], now: Int64) throws(StoreError) -> [String] {
        let appID = try database.appID(app)
        let encoded = try NewMessage.storedTexts(messages)
        return try database.writing { connection in
            try MessageQueries.create(messages, encoded: encoded, appID: appID, now: now, connection) { message in
                try Self.advanceActivity(message, appID: appID, now: now, connection)
            }
        }
    }

    public func messageStatus(app: String?, code: String) throws(StoreError) -> MessageStatus? {
        let appFilter = try app.map { (code: String) throws(StoreError) in try database.appID(code) }
        return try database.readingSnapshot { connection in
            try MessageQueries.status(code: code, appFilter: appFilter, appCode: database.appCode, reports: Self.reportedDevices, connection)
        }
    }

    public func recentMessages(app: String, limit: Int, offset: Int) throws(StoreError) -> [MessageStatus] {
        let appID = try database.appID(app)
        let codes = try database.reading { try MessageQueries.recentCodes(appID: appID, limit: limit, offset: offset, $0) }
        var result: [MessageStatus] = []
        for code in codes {
            if let status = try messageStatus(app: app, code: code) { result.append(status) }
        }
        return result
    }

    public func messageCount(app: String) throws(StoreError) -> Int {
        let appID = try database.appID(app)
        return try database.reading { try MessageQueries.count(appID: appID, $0) }
    }

    public func campaignTotals(app: String, since: Int64) throws(StoreError) -> CampaignTotals {
        let appID = try database.appID(app)
        return try database.reading { try MessageQueries.totals(appID: appID, since: since, $0) }
    }

    public func deleteMessage(app: String, code: String, now: Int64) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.writing { try MessageQueries.delete(appID: appID, code: code, now: now, $0) }
    }

    public func tagTypes(app: String) throws(StoreError) -> [String: TagType] {
        let appID = try database.appID(app)
        return try database.reading { try MessageQueries.tagTypes(appID: appID, $0) }
    }
}

/// An `AnalyticsStore` on a SQL backend: the reads that do not depend on it.
public protocol SQLAnalyticsStore: AnalyticsStore {
    associatedtype Database: SQLDatabase

    var database: Database { get }
}

extension SQLAnalyticsStore {
    public func applicationActivity(app: String, from: Int64, to: Int64) throws(StoreError) -> [ActivityCount] {
        let appID = try database.appID(app)
        return try database.readingSnapshot { try AnalyticsQueries.applicationActivity($0, appID: appID, from: from, to: to) }
    }

    public func optIns(app: String, from: Int64, to: Int64) throws(StoreError) -> [OptInCount] {
        let appID = try database.appID(app)
        return try database.readingSnapshot { try AnalyticsQueries.optIns($0, appID: appID, from: from, to: to) }
    }
}

/// A `RichMediaStore` on a SQL backend: the in-app reads that do not depend on it.
public protocol SQLRichMediaStore: RichMediaStore {
    associatedtype Database: SQLDatabase

    var database: Database { get }
}

extension SQLRichMediaStore {
    public func inApps(app: String) throws(StoreError) -> [InApp] {
        let appID = try database.appID(app)
        return try database.reading { try InAppQueries.inApps($0, app: app, appID: appID, filter: nil, []) }
    }

    public func inApps(app: String, triggeredBy event: String) throws(StoreError) -> [InApp] {
        let appID = try database.appID(app)
        return try database.reading {
            try InAppQueries.inApps($0, app: app, appID: appID,
                                    filter: "i.id IN (SELECT in_app_id FROM in_app_triggers WHERE app_id = $1 AND event = $2)", [.text(event)])
        }
    }
}
