import Core

/// The `RichMediaStore` of every SQL backend, written once over the backend's `database`: pages
/// (zips stored in the database), the in-apps that show them, and the SDK reports counted against
/// both. The backend supplies only how it stores SDK reports.
public final class SQLRichMediaStore<Database: SQLDatabase>: RichMediaStore {
    /// Stores SDK reports as `ReportLogStore.record` does, with their applications' ids, inside the
    /// caller's transaction.
    public typealias ReportInsert = @Sendable (_ reports: [SDKReport], _ appIDs: [Int64], _ now: Int64, Database.Connection) throws -> Void

    let database: Database
    private let insertReports: ReportInsert

    public init(database: Database, insertReports: @escaping ReportInsert) {
        self.database = database
        self.insertReports = insertReports
    }

    // MARK: Pages

    public func putPage(app: String, code: String, zip: [UInt8], sha256: String, now: Int64) throws(StoreError) -> RichMediaPage {
        let appID = try database.appID(app)
        return try database.writing { connection in
            try connection.selectFirst(
                """
                INSERT INTO rich_media_pages AS p (app_id, code, sha256, size, version, zip, created_at, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, $5, $5)
                ON CONFLICT (app_id, code) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
                  version = \(connection.greatest)(p.version + 1, excluded.version), zip = excluded.zip, updated_at = excluded.updated_at
                RETURNING \(RichMediaPage.columns(""))
                """, [.integer(appID), .text(code), .text(sha256), .integer(Int64(zip.count)), .integer(now), .bytes(zip)]
            ) { RichMediaPage(app: app, row: $0) }
                ?? RichMediaPage(app: app, code: code, sha256: sha256, size: zip.count, version: now, actions: 0, createdAt: now, updatedAt: now)
        }
    }

    public func pages(app: String) throws(StoreError) -> [RichMediaPage] {
        let appID = try database.appID(app)
        return try database.reading { connection in
            try connection.select("SELECT \(RichMediaPage.columns()) FROM rich_media_pages p WHERE app_id = $1 ORDER BY code\(connection.byteOrder)",
                                  [.integer(appID)]) { RichMediaPage(app: app, row: $0) }
        }
    }

    public func page(app: String, code: String) throws(StoreError) -> RichMediaPage? {
        let appID = try database.appID(app)
        return try database.reading { connection in
            try connection.selectFirst("SELECT \(RichMediaPage.columns()) FROM rich_media_pages p WHERE app_id = $1 AND code = $2",
                                       [.integer(appID), .text(code)]) { RichMediaPage(app: app, row: $0) }
        }
    }

    public func zip(app: String, code: String) throws(StoreError) -> (page: RichMediaPage, bytes: [UInt8])? {
        let appID = try database.appID(app)
        return try database.reading { connection in
            try connection.selectFirst("SELECT \(RichMediaPage.columns()), zip FROM rich_media_pages p WHERE app_id = $1 AND code = $2",
                                       [.integer(appID), .text(code)]) { (RichMediaPage(app: app, row: $0), $0.bytes(7)) }
        }
    }

    public func deletePage(app: String, code: String) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.writing { connection in
            // Locks the page, so that no in-app starts showing it between the check and the delete.
            guard let pageID = try connection.selectFirst(
                "SELECT id FROM rich_media_pages WHERE app_id = $1 AND code = $2\(connection.lockForUpdate(of: "rich_media_pages"))", [.integer(appID), .text(code)], { $0.int(0) }
            ) else { return false }
            if let inApp = try connection.selectFirst("SELECT code FROM in_apps WHERE page_id = $1 ORDER BY code\(connection.byteOrder)",
                                                      [.integer(pageID)], { $0.text(0) }) {
                throw StoreError.invalid("rich media \(code) is shown by in-app \(inApp); delete or change that in-app first")
            }
            return try connection.execute("DELETE FROM rich_media_pages WHERE id = $1", [.integer(pageID)]) > 0
        }
    }

    // MARK: In-apps

    public func putInApp(app: String, _ spec: InApp.Spec, now: Int64) throws(StoreError) -> InApp {
        let appID = try database.appID(app)
        return try database.writing { connection in
            guard let pageID = try connection.selectFirst(
                "SELECT id FROM rich_media_pages WHERE app_id = $1 AND code = $2\(connection.lockForShare)",
                [.integer(appID), .text(spec.richMedia)], { $0.int(0) }
            ) else {
                throw StoreError.invalid("rich_media \(spec.richMedia) not found; upload it first")
            }
            let id = try InAppQueries.store(spec, appID: appID, pageID: pageID, now: now, connection)
            guard let stored = try InAppQueries.inApps(connection, app: app, appID: appID, filter: "i.id = $2", [.integer(id)]).first else {
                throw StoreError.invalid("in-app \(spec.code) vanished while it was written")
            }
            return stored
        }
    }

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

    public func deleteInApp(app: String, code: String) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.writing { connection in
            try connection.execute("DELETE FROM in_app_triggers WHERE in_app_id = (SELECT id FROM in_apps WHERE app_id = $1 AND code = $2)",
                                   [.integer(appID), .text(code)])
            return try connection.execute("DELETE FROM in_apps WHERE app_id = $1 AND code = $2", [.integer(appID), .text(code)]) > 0
        }
    }

    public func record(_ report: SDKReport, counting: InAppReport, now: Int64) throws(StoreError) {
        let appID = try database.appID(report.app)
        try database.writing { connection in
            try insertReports([report], [appID], now, connection)
            try InAppQueries.count(counting, appID: appID, connection)
        }
    }
}
