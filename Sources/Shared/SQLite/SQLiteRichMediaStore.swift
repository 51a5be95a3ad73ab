import Core
import StoreCore

/// `RichMediaStore` on the shared SQLite database: each zip is a blob in `rich_media_pages`, so it
/// is committed with its metadata and copied by `--backup`.
public final class SQLiteRichMediaStore: SQLRichMediaStore {
    public let database: SQLiteDatabase

    public init(database: SQLiteDatabase) {
        self.database = database
    }

    // MARK: Pages

    public func putPage(app: String, code: String, zip: [UInt8], sha256: String, now: Int64) throws(StoreError) -> RichMediaPage {
        let appID = try database.appID(app)
        return try database.write { writer in
            let connection = writer.connection
            return try connection.prepare(
                """
                INSERT INTO rich_media_pages AS p (app_id, code, sha256, size, version, zip, created_at, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5, ?5)
                ON CONFLICT (app_id, code) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, version = max(p.version + 1, excluded.version),
                  zip = excluded.zip, updated_at = excluded.updated_at
                RETURNING \(RichMediaPage.columns(""))
                """
            ).first([.integer(appID), .text(code), .text(sha256), .integer(Int64(zip.count)), .integer(now), .blob(zip)]) {
                RichMediaPage(app: app, row: $0)
            } ?? RichMediaPage(app: app, code: code, sha256: sha256, size: zip.count, version: now, actions: 0, createdAt: now,
                               updatedAt: now)
        }
    }

    public func pages(app: String) throws(StoreError) -> [RichMediaPage] {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.prepare("SELECT \(RichMediaPage.columns()) FROM rich_media_pages p WHERE app_id = ? ORDER BY code")
                .rows([.integer(appID)]) { RichMediaPage(app: app, row: $0) }
        }
    }

    public func page(app: String, code: String) throws(StoreError) -> RichMediaPage? {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.prepare("SELECT \(RichMediaPage.columns()) FROM rich_media_pages p WHERE app_id = ? AND code = ?")
                .first([.integer(appID), .text(code)]) { RichMediaPage(app: app, row: $0) }
        }
    }

    public func zip(app: String, code: String) throws(StoreError) -> (page: RichMediaPage, bytes: [UInt8])? {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.prepare("SELECT \(RichMediaPage.columns()), zip FROM rich_media_pages p WHERE app_id = ? AND code = ?")
                .first([.integer(appID), .text(code)]) { (RichMediaPage(app: app, row: $0), $0.blob(7)) }
        }
    }

    public func deletePage(app: String, code: String) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.write { writer in
            let connection = writer.connection
            if let inApp = try connection.prepare(
                "SELECT i.code FROM in_apps i JOIN rich_media_pages p ON p.id = i.page_id WHERE p.app_id = ? AND p.code = ? ORDER BY i.code"
            ).first([.integer(appID), .text(code)], { $0.text(0) }) {
                throw StoreError.invalid("rich media \(code) is shown by in-app \(inApp); delete or change that in-app first")
            }
            try connection.prepare("DELETE FROM rich_media_pages WHERE app_id = ? AND code = ?").run([.integer(appID), .text(code)])
            return connection.changes > 0
        }
    }

    // MARK: In-apps

    public func putInApp(app: String, _ spec: InApp.Spec, now: Int64) throws(StoreError) -> InApp {
        let appID = try database.appID(app)
        return try database.write { writer in
            let connection = writer.connection
            guard let pageID = try connection.prepare("SELECT id FROM rich_media_pages WHERE app_id = ? AND code = ?")
                .first([.integer(appID), .text(spec.richMedia)], { $0.int(0) }) else {
                throw StoreError.invalid("rich_media \(spec.richMedia) not found; upload it first")
            }
            let id = try InAppQueries.store(spec, appID: appID, pageID: pageID, now: now, connection)
            guard let stored = try InAppQueries.inApps(connection, app: app, appID: appID, filter: "i.id = $2", [.integer(id)]).first else {
                throw StoreError.invalid("in-app \(spec.code) vanished while it was written")
            }
            return stored
        }
    }

    public func deleteInApp(app: String, code: String) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.write { writer in
            let connection = writer.connection
            try connection.prepare("DELETE FROM in_app_triggers WHERE in_app_id = (SELECT id FROM in_apps WHERE app_id = ? AND code = ?)")
                .run([.integer(appID), .text(code)])
            try connection.prepare("DELETE FROM in_apps WHERE app_id = ? AND code = ?").run([.integer(appID), .text(code)])
            return connection.changes > 0
        }
    }

    public func record(_ report: SDKReport, counting: InAppReport, now: Int64) throws(StoreError) {
        let appID = try database.appID(report.app)
        try database.write { writer in
            let connection = writer.connection
            try SQLiteDeviceStore.insert([report], appIDs: [appID], now: now, connection)
            try InAppQueries.count(counting, appID: appID, connection)
        }
    }
}
