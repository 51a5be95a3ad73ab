extension RichMediaPage {
    /// The page columns both backends select, of the table aliased `p` (or unqualified: `RETURNING` in SQLite).
    package static func columns(_ alias: String = "p.") -> String {
        ["code", "sha256", "size", "version", "actions", "created_at", "updated_at"].map { alias + $0 }.joined(separator: ", ")
    }

    /// A page from `columns`, starting at column `base`.
    package init(app: String, row: some StoredRow, base: Int32 = 0) {
        self.init(app: app, code: row.text(base), sha256: row.text(base + 1), size: Int(row.int(base + 2)), version: row.int(base + 3),
                  actions: Int(row.int(base + 4)), createdAt: row.int(base + 5), updatedAt: row.int(base + 6))
    }
}

extension InApp {
    /// The in-app columns both backends select (the row id first), then the page's.
    package static let columns = """
        i.id, i.code, i.layout, i.close_button_type, i.priority, i.required, i.shown, i.actions, i.created_at, i.updated_at,
        \(RichMediaPage.columns())
        """
    package static let tables = "in_apps i JOIN rich_media_pages p ON p.id = i.page_id"

    /// An in-app from `columns` with its triggers; `required` is read as an integer (0 or 1).
    package init(app: String, row: some StoredRow, triggers: [InAppTrigger]) {
        let page = RichMediaPage(app: app, row: row, base: 10)
        let spec = Spec(code: row.text(1), richMedia: page.code, layout: Layout(rawValue: row.text(2)) ?? .fullscreen,
                        closeButtonType: Int(row.int(3)), priority: Int(row.int(4)), required: row.int(5) != 0, triggers: triggers)
        self.init(app: app, spec: spec, page: page, shown: Int(row.int(6)), actions: Int(row.int(7)), createdAt: row.int(8),
                  updatedAt: row.int(9))
    }
}

extension InApp {
    /// The in-apps read with `columns` (row id first) with their triggers, read as (in-app row id,
    /// trigger) in position order, attached.
    package static func attaching(_ triggers: [(id: Int64, trigger: InAppTrigger)], to found: [(id: Int64, inApp: InApp)]) -> [InApp] {
        let byID = Dictionary(grouping: triggers, by: \.id)
        return found.map { id, inApp in
            var inApp = inApp
            inApp.spec.triggers = byID[id]?.map(\.trigger) ?? []
            return inApp
        }
    }

    /// The query of an application's triggers (`$1` its id, which SQLite also reads) for `attaching`.
    package static let triggersQuery = "SELECT in_app_id, event, conditions FROM in_app_triggers WHERE app_id = $1 ORDER BY in_app_id, position"
}

extension InAppTrigger {
    /// The stored text of `conditions`.
    package var conditionsText: String { JSON.array(conditions.map(\.json)).text }

    /// A trigger read back from `conditionsText`; conditions that no longer parse are dropped.
    package init(event: String, conditionsText: String) {
        let items = (try? JSON.parse(conditionsText))?.arrayValue ?? []
        self.init(event: event, conditions: items.compactMap { try? AttributeCondition(json: $0) })
    }
}
