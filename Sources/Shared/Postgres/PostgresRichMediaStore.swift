import Core

extension PostgresRow: StoredRow {}

/// `RichMediaStore` on PostgreSQL: each zip is a `bytea` in `rich_media_pages`, so every ingest
/// sharing the database serves the same pages, and `pg_dump` copies them.
public final class PostgresRichMediaStore: RichMediaStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) {
        self.database = database
    }

    // MARK: Pages

    public func putPage(app: String, code: String, zip: [UInt8], sha256: String, now: Int64) throws(StoreError) -> RichMediaPage {
        let appID = try database.appID(app)
        return try database.write { transaction in
            try transaction.connection.first(
                """
                INSERT INTO rich_media_pages AS p (app_id, code, sha256, size, version, zip, created_at, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, $5, $5)
                ON CONFLICT (app_id, code) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
                  version = greatest(p.version + 1, excluded.version), zip = excluded.zip, updated_at = excluded.updated_at
                RETURNING \(RichMediaPage.columns())
                """, [.integer(appID), .text(code), .text(sha256), .integer(Int64(zip.count)), .integer(now), .bytea(zip)]
            ) { RichMediaPage(app: app, row: $0) }
                ?? RichMediaPage(app: app, code: code, sha256: sha256, size: zip.count, version: now, actions: 0, createdAt: now, updatedAt: now)
        }
    }

    public func pages(app: String) throws(StoreError) -> [RichMediaPage] {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.rows("SELECT \(RichMediaPage.columns()) FROM rich_media_pages p WHERE app_id = $1 ORDER BY code COLLATE \"C\"", [.integer(appID)]) {
                RichMediaPage(app: app, row: $0)
            }
        }
    }

    public func page(app: String, code: String) throws(StoreError) -> RichMediaPage? {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.first("SELECT \(RichMediaPage.columns()) FROM rich_media_pages p WHERE app_id = $1 AND code = $2",
                                 [.integer(appID), .text(code)]) { RichMediaPage(app: app, row: $0) }
        }
    }

    public func zip(app: String, code: String) throws(StoreError) -> (page: RichMediaPage, bytes: [UInt8])? {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.first("SELECT \(RichMediaPage.columns()), zip FROM rich_media_pages p WHERE app_id = $1 AND code = $2",
                                 [.integer(appID), .text(code)]) { (RichMediaPage(app: app, row: $0), $0.bytes(7)) }
        }
    }

    public func deletePage(app: String, code: String) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.write { transaction in
            let connection = transaction.connection
            // Locks the page, so that no in-app starts showing it between the check and the delete.
            guard let pageID = try connection.first("SELECT id FROM rich_media_pages WHERE app_id = $1 AND code = $2 FOR UPDATE",
                                                    [.integer(appID), .text(code)], { $0.int(0) }) else { return false }
            if let inApp = try connection.first("SELECT code FROM in_apps WHERE page_id = $1 ORDER BY code COLLATE \"C\"", [.integer(pageID)], { $0.text(0) }) {
                throw StoreError.invalid("rich media \(code) is shown by in-app \(inApp); delete or change that in-app first")
            }
            return try connection.run("DELETE FROM rich_media_pages WHERE id = $1", [.integer(pageID)]) > 0
        }
    }

    // MARK: In-apps

    public func putInApp(app: String, _ spec: InApp.Spec, now: Int64) throws(StoreError) -> InApp {
        let appID = try database.appID(app)
        return try database.write { transaction in
            let connection = transaction.connection
            guard let pageID = try connection.first("SELECT id FROM rich_media_pages WHERE app_id = $1 AND code = $2 FOR SHARE",
                                                    [.integer(appID), .text(spec.richMedia)], { $0.int(0) }) else {
                throw StoreError.invalid("rich_media \(spec.richMedia) not found; upload it first")
            }
            let id = try connection.first(
                """
                INSERT INTO in_apps (app_id, code, page_id, layout, close_button_type, priority, required, created_at, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
                ON CONFLICT (app_id, code) DO UPDATE SET page_id = excluded.page_id, layout = excluded.layout,
                  close_button_type = excluded.close_button_type, priority = excluded.priority, required = excluded.required,
                  updated_at = excluded.updated_at
                RETURNING id
                """, [.integer(appID), .text(spec.code), .integer(pageID), .text(spec.layout.rawValue), .integer(Int64(spec.closeButtonType)),
                      .integer(Int64(spec.priority)), .integer(spec.required ? 1 : 0), .integer(now)]
            ) { $0.int(0) } ?? 0
            try connection.run("DELETE FROM in_app_triggers WHERE in_app_id = $1", [.integer(id)])
            for (position, trigger) in spec.triggers.enumerated() {
                try connection.run("INSERT INTO in_app_triggers (in_app_id, position, app_id, event, conditions) VALUES ($1, $2, $3, $4, $5)",
                                   [.integer(id), .integer(Int64(position)), .integer(appID), .text(trigger.event), .text(trigger.conditionsText)])
            }
            guard let stored = try Self.inApps(connection, app: app, appID: appID, filter: "i.id = $2", [.integer(id)]).first else {
                throw StoreError.invalid("in-app \(spec.code) vanished while it was written")
            }
            return stored
        }
    }

    public func inApps(app: String) throws(StoreError) -> [InApp] {
        let appID = try database.appID(app)
        return try database.read { connection in try Self.inApps(connection, app: app, appID: appID, filter: "true", []) }
    }

    public func inApps(app: String, triggeredBy event: String) throws(StoreError) -> [InApp] {
        let appID = try database.appID(app)
        return try database.read { connection in
            try Self.inApps(connection, app: app, appID: appID,
                            filter: "i.id IN (SELECT in_app_id FROM in_app_triggers WHERE app_id = $1 AND event = $2)", [.text(event)])
        }
    }

    public func deleteInApp(app: String, code: String) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.write { transaction in
            let connection = transaction.connection
            try connection.run("DELETE FROM in_app_triggers WHERE in_app_id = (SELECT id FROM in_apps WHERE app_id = $1 AND code = $2)",
                               [.integer(appID), .text(code)])
            return try connection.run("DELETE FROM in_apps WHERE app_id = $1 AND code = $2", [.integer(appID), .text(code)]) > 0
        }
    }

    public func record(_ report: SDKReport, counting: InAppReport, now: Int64) throws(StoreError) {
        let appID = try database.appID(report.app)
        try database.write { transaction in
            let connection = transaction.connection
            try PostgresDeviceStore.insert([report], appIDs: [appID], now: now, connection)
            switch counting {
            case .shown(let inApp):
                try connection.run("UPDATE in_apps SET shown = shown + 1 WHERE app_id = $1 AND code = $2", [.integer(appID), .text(inApp)])
            case .action(let inApp, let richMedia):
                if let inApp {
                    try connection.run("UPDATE in_apps SET actions = actions + 1 WHERE app_id = $1 AND code = $2", [.integer(appID), .text(inApp)])
                }
                if let richMedia {
                    try connection.run("UPDATE rich_media_pages SET actions = actions + 1 WHERE app_id = $1 AND code = $2",
                                       [.integer(appID), .text(richMedia)])
                }
            }
        }
    }

    /// The in-apps of `appID` (parameter $1) that pass `filter` (further parameters from $2), with
    /// their triggers, highest priority first, then the latest updated, then by code.
    static func inApps(_ connection: PostgresConnection, app: String, appID: Int64, filter: String, _ values: [PostgresValue]) throws -> [InApp] {
        let found = try connection.rows(
            "SELECT \(InApp.columns) FROM \(InApp.tables) WHERE i.app_id = $1 AND \(filter) ORDER BY i.priority DESC, i.updated_at DESC, i.code COLLATE \"C\"",
            [.integer(appID)] + values
        ) { (id: $0.int(0), inApp: InApp(app: app, row: $0, triggers: [])) }
        guard !found.isEmpty else { return [] }
        let triggers = try connection.rows(InApp.triggersQuery, [.integer(appID)]) {
            (id: $0.int(0), trigger: InAppTrigger(event: $0.text(1), conditionsText: $0.text(2)))
        }
        return InApp.attaching(triggers, to: found)
    }
}
