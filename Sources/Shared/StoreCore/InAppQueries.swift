import Core

/// The in-app statements both backends run alike (the caller holds the transaction).
package enum InAppQueries {
    /// Stores the in-app `spec` of the application `appID`, showing the page `pageID`, with its
    /// triggers in their order (replacing those it had); returns its id.
    package static func store<Connection: StatementRunner>(_ spec: InApp.Spec, appID: Int64, pageID: Int64, now: Int64,
                                                           _ connection: Connection) throws -> Int64 {
        let id = try connection.selectFirst(
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
        try connection.execute("DELETE FROM in_app_triggers WHERE in_app_id = $1", [.integer(id)])
        for (position, trigger) in spec.triggers.enumerated() {
            try connection.execute("INSERT INTO in_app_triggers (in_app_id, position, app_id, event, conditions) VALUES ($1, $2, $3, $4, $5)",
                                   [.integer(id), .integer(Int64(position)), .integer(appID), .text(trigger.event), .text(trigger.conditionsText)])
        }
        return id
    }

    /// The in-apps of `appID` (parameter $1) that pass `filter` (further parameters from $2; nil:
    /// all of them), with their triggers, highest priority first, then the latest updated, then by code.
    package static func inApps<Connection: StatementRunner>(_ connection: Connection, app: String, appID: Int64, filter: String?,
                                                             _ values: [Connection.Value]) throws -> [InApp] {
        let found = try connection.select(
            """
            SELECT \(InApp.columns) FROM \(InApp.tables) WHERE i.app_id = $1\(filter.map { " AND " + $0 } ?? "")
            ORDER BY i.priority DESC, i.updated_at DESC, i.code\(connection.byteOrder)
            """, [.integer(appID)] + values
        ) { (id: $0.int(0), inApp: InApp(app: app, row: $0, triggers: [])) }
        guard !found.isEmpty else { return [] }
        let triggers = try connection.select(InApp.triggersQuery, [.integer(appID)]) {
            (id: $0.int(0), trigger: InAppTrigger(event: $0.text(1), conditionsText: $0.text(2)))
        }
        return InApp.attaching(triggers, to: found)
    }

    /// Counts what an in-app report says: an in-app shown, or an action in an in-app and its page.
    package static func count<Connection: StatementRunner>(_ counting: InAppReport, appID: Int64, _ connection: Connection) throws {
        switch counting {
        case .shown(let inApp):
            try connection.execute("UPDATE in_apps SET shown = shown + 1 WHERE app_id = $1 AND code = $2", [.integer(appID), .text(inApp)])
        case .action(let inApp, let richMedia):
            if let inApp {
                try connection.execute("UPDATE in_apps SET actions = actions + 1 WHERE app_id = $1 AND code = $2", [.integer(appID), .text(inApp)])
            }
            if let richMedia {
                try connection.execute("UPDATE rich_media_pages SET actions = actions + 1 WHERE app_id = $1 AND code = $2",
                                       [.integer(appID), .text(richMedia)])
            }
        }
    }
}
