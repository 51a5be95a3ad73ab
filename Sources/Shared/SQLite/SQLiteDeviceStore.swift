import Synchronization
import Core
import StoreCore

/// `DeviceStore` on the shared SQLite database.
public final class SQLiteDeviceStore: DeviceStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) {
        self.database = database
    }

    /// Opens the database on its own (tests and tools).
    public convenience init(path: String, busyTimeoutMilliseconds: Int, apps: [AppConfiguration]) throws(StoreError) {
        self.init(database: try SQLiteDatabase(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds, apps: apps))
    }

    func appID(_ code: String) throws(StoreError) -> Int64 { try database.appID(code) }

    func write<T: Sendable>(oneStatement: Bool = false, _ body: (SQLiteDatabase.Writer) throws -> T) throws(StoreError) -> T {
        try database.write(oneStatement: oneStatement, body)
    }

    func read<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T { try database.read(body) }

    /// Updates the device's attributes, creating it when new; returns its row id.
    func upsertDevice(_ connection: SQLiteConnection, appID: Int64, hwid: String, attributes a: DeviceAttributes,
                      now: Int64) throws -> Int64 {
        let values: [SQLiteValue] = DeviceColumns.values(appID: appID, hwid: hwid, a, now: now)
        // With no attributes there is nothing to update (setTags usually sends none).
        if a != DeviceAttributes(), let id = try connection.prepare(Self.updateDevice).first(values, { $0.int(0) }) {
            return id
        }
        // Unchanged devices are not rewritten (a rewrite costs a WAL page per index).
        if let id = try deviceID(connection, appID: appID, hwid: hwid) { return id }
        guard a.platform != nil else {
            throw StoreError.invalid("device_type is required for a device Herald has not seen (register it first)")
        }
        let id = try connection.prepare(
            "INSERT INTO devices (\(DeviceColumns.inserted)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12) RETURNING id"
        ).first(values) { $0.int(0) }!
        try Self.recordNew([NewDevice(appID: appID, id: id, at: now, attributes: a, hasToken: false)], connection)
        return id
    }

    /// Updates the attributes given (parameters as `DeviceColumns` lays them out) of a device whose
    /// attributes they change, and returns its id; nothing when the device is new or unchanged.
    static let updateDevice = """
        UPDATE devices SET \(DeviceColumns.kept(DeviceColumns.attributes, given: { "?\($0.parameter)" }, stored: \.name)), updated_at = ?12
        WHERE app_id = ?1 AND hwid = ?2
          AND (\(DeviceColumns.changed(DeviceColumns.attributes, given: { "?\($0.parameter)" }, stored: \.name, differs: "IS NOT")))
        RETURNING id
        """

    /// Inserts a registered device, or updates what changed (parameters as `DeviceColumns` lays
    /// them out, push token `13`, gateway `14`, web keys `15` and `16`); an unchanged device is not
    /// rewritten. The web keys are replaced like the token (a registration without them clears them).
    static let registration = registrationUpsert(rows: 1)

    /// The row id of a device, by application and hwid.
    func deviceID(_ connection: SQLiteConnection, appID: Int64, hwid: String) throws -> Int64? {
        try connection.prepare("SELECT id FROM devices WHERE app_id = ? AND hwid = ?").first([.integer(appID), .text(hwid)]) { $0.int(0) }
    }

    /// registerDevice in one statement: insert the device, or update what changed (attributes, token,
    /// gateway, subscription). Unchanged devices are not rewritten.
    func upsertRegistration(_ connection: SQLiteConnection, appID: Int64, registration: DeviceRegistration, now: Int64) throws -> Int64 {
        let a = registration.attributes
        guard a.platform != nil else {
            throw StoreError.invalid("device_type is required")
        }
        let values: [SQLiteValue] = DeviceColumns.values(appID: appID, registration, now: now)
        // No RETURNING: SQLite runs such a statement into a temporary table first, which costs more
        // than the insert. Only an insert sets the connection's last insert row id (an update does
        // not, and a device's id is never 0), so from 0 it tells a new device from an existing one,
        // whose id is looked up.
        connection.lastInsertRowID = 0
        try connection.prepare(Self.registration).run(values)
        let inserted = connection.lastInsertRowID
        if inserted != 0 {
            try Self.recordNew([NewDevice(appID: appID, id: inserted, at: now, attributes: a, hasToken: true)], connection)
            return inserted
        }
        return try registeredDeviceID(connection, appID: appID, hwid: registration.hwid)
    }

    /// The id of a device a registration has just inserted or updated.
    func registeredDeviceID(_ connection: SQLiteConnection, appID: Int64, hwid: String) throws -> Int64 {
        guard let id = try deviceID(connection, appID: appID, hwid: hwid) else {
            throw StoreError.invalid("device vanished during registration")
        }
        return id
    }

    /// The largest device id so far (0 with none).
    func newestDeviceID(_ connection: SQLiteConnection) throws -> Int64 {
        try connection.prepare("SELECT max(id) FROM devices").first { $0.int(0) } ?? 0
    }

    /// registerDevice's writes inside the caller's transaction: the device, its user, its tags.
    func register(_ writer: SQLiteDatabase.Writer, appID: Int64, registration: DeviceRegistration, now: Int64) throws {
        let id = try upsertRegistration(writer.connection, appID: appID, registration: registration, now: now)
        if let userID = registration.attributes.userID {
            try upsertUser(writer.connection, appID: appID, userID: userID, now: now)
        }
        try applyTags(writer, appID: appID, deviceID: id, updates: registration.tags)
    }

    func upsertUser(_ connection: SQLiteConnection, appID: Int64, userID: String, now: Int64) throws {
        try connection.prepare(
            "INSERT INTO users (app_id, user_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?3) ON CONFLICT DO NOTHING"
        ).run([.integer(appID), .text(userID), .integer(now)])
    }

    func tagType(_ writer: SQLiteDatabase.Writer, appID: Int64, name: String) throws -> TagType? {
        if let type = writer.tagTypes[appID]?[name] { return type }
        let stored = try writer.connection.prepare("SELECT type FROM tag_definitions WHERE app_id = ? AND name = ?")
            .first([.integer(appID), .text(name)]) { $0.int(0) }
        guard let raw = stored, let type = TagType(rawValue: Int(raw)) else { return nil }
        writer.tagTypes[appID, default: [:]][name] = type
        return type
    }

    func currentTag(_ connection: SQLiteConnection, deviceID: Int64, name: String) throws -> TagValue? {
        try connection.prepare("SELECT type, num, str FROM device_tags WHERE device_id = ? AND name = ?")
            .first([.integer(deviceID), .text(name)]) { row in
                TagType(rawValue: Int(row.int(0))).flatMap {
                    TagValue.fromStorage(type: $0, number: row.value(1), text: row.optionalText(2))
                }
            } ?? nil
    }

    /// Deletes the items of one device's list (`device_id`, `name`): before a list tag is set, here
    /// and in a batch (`writeListItems`), which so share one prepared statement.
    static let deleteListItems = "DELETE FROM device_tag_items WHERE device_id = ? AND name = ?"

    /// Applies `updates` to one device inside the caller's transaction.
    func applyTags(_ writer: SQLiteDatabase.Writer, appID: Int64, deviceID: Int64, updates: [TagUpdate]) throws {
        let connection = writer.connection
        for update in updates {
            let type = try tagType(writer, appID: appID, name: update.name)
            var current: TagValue?
            switch update.operation {
            case .increment, .append, .remove: current = try currentTag(connection, deviceID: deviceID, name: update.name)
            case .set, .delete: break
            }
            let next = try TagRules.apply(update.operation, name: update.name, to: current, type: type)
            if (type ?? next?.type) == .list {
                try connection.prepare(Self.deleteListItems).run([.integer(deviceID), .text(update.name)])
            }
            guard let next else {
                try connection.prepare("DELETE FROM device_tags WHERE device_id = ? AND name = ?")
                    .run([.integer(deviceID), .text(update.name)])
                if update.name == "badge" {
                    try connection.prepare("UPDATE devices SET badge = 0 WHERE id = ?").run([.integer(deviceID)])
                }
                continue
            }
            if type == nil {
                try connection.prepare("INSERT OR IGNORE INTO tag_definitions (app_id, name, type, created_at) VALUES (?, ?, ?, strftime('%s'))")
                    .run([.integer(appID), .text(update.name), .integer(Int64(next.type.rawValue))])
                writer.tagTypes[appID, default: [:]][update.name] = next.type
            }
            try connection.prepare(
                """
                INSERT INTO device_tags (device_id, name, app_id, type, num, str) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                ON CONFLICT DO UPDATE SET type = ?4, num = ?5, str = ?6 WHERE type IS NOT ?4 OR num IS NOT ?5 OR str IS NOT ?6
                """
            ).run([.integer(deviceID), .text(update.name), .integer(appID), .integer(Int64(next.type.rawValue)),
                   next.storedNumber, next.storedText])
            if case .list(let items) = next {
                let insert = try connection.prepare("INSERT OR IGNORE INTO device_tag_items (device_id, name, item, app_id) VALUES (?, ?, ?, ?)")
                for item in items {
                    try insert.run([.integer(deviceID), .text(update.name), .text(item), .integer(appID)])
                }
            }
            if update.name == "badge", case .integer(let badge) = next {
                try connection.prepare("UPDATE devices SET badge = ? WHERE id = ?").run([.integer(badge), .integer(deviceID)])
            }
        }
    }

    // MARK: - DeviceStore

    public func registerDevice(_ registration: DeviceRegistration, now: Int64) throws(StoreError) {
        let appID = try appID(registration.app)
        if try deferRegistration(registration, appID: appID, now: now) { return }
        try write { writer in try register(writer, appID: appID, registration: registration, now: now) }
    }

    public func unregisterDevice(app: String, hwid: String, now: Int64) throws(StoreError) {
        let appID = try appID(app)
        try write { writer in
            try writer.connection.prepare("UPDATE devices SET push_token = NULL, web_p256dh = NULL, web_auth = NULL, updated_at = ? WHERE app_id = ? AND hwid = ?")
                .run([.integer(now), .integer(appID), .text(hwid)])
        }
    }

    public func deleteDevice(app: String, hwid: String, now: Int64) throws(StoreError) -> Bool {
        let appID = try appID(app)
        return try write { writer in
            let connection = writer.connection
            guard let id = try connection.prepare(Self.anonymize).first([.integer(appID), .text(hwid), .integer(now)], { $0.int(0) }) else {
                return false
            }
            for table in ["device_tags", "device_tag_items", "live_activity_tokens", "inbox_statuses"] {
                try connection.prepare("DELETE FROM \(table) WHERE device_id = ?").run([.integer(id)])
            }
            return true
        }
    }

    /// deleteDevice's row: everything that identifies the device or its user cleared, a random hwid
    /// that no SDK sends (parameters: application id, hwid, time).
    static let anonymize = """
        UPDATE devices SET hwid = 'deleted:' || lower(hex(randomblob(16))), push_token = NULL, gateway = NULL, web_p256dh = NULL,
          web_auth = NULL, language = NULL, timezone_offset = NULL, os_version = NULL, device_model = NULL, sdk_version = NULL,
          user_id = NULL, notification_types = NULL, subscribed = 0, badge = 0, last_open_at = NULL, token_invalid_reason = NULL,
          updated_at = ?3
        WHERE app_id = ?1 AND hwid = ?2
        RETURNING id
        """

    public func applicationOpen(app: String, hwid: String, attributes: DeviceAttributes, now: Int64) throws(StoreError) {
        let appID = try appID(app)
        try write { writer in
            let id = try upsertDevice(writer.connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try writer.connection.prepare("UPDATE devices SET last_open_at = ? WHERE id = ?").run([.integer(now), .integer(id)])
        }
    }

    public func setTags(app: String, hwid: String, attributes: DeviceAttributes, updates: [TagUpdate], now: Int64) throws(StoreError) {
        let appID = try appID(app)
        if try deferTags(hwid: hwid, attributes: attributes, updates: updates, appID: appID, now: now) { return }
        try write { writer in
            let id = try upsertDevice(writer.connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try applyTags(writer, appID: appID, deviceID: id, updates: updates)
        }
    }

    public func setUserTags(app: String, userID: String, updates: [TagUpdate], now: Int64) throws(StoreError) -> Int {
        let appID = try appID(app)
        return try write { writer in
            let devices = try writer.connection.prepare("SELECT id FROM devices WHERE app_id = ? AND user_id = ? ORDER BY id")
                .rows([.integer(appID), .text(userID)]) { $0.int(0) }
            for id in devices {
                try applyTags(writer, appID: appID, deviceID: id, updates: updates)
                try writer.connection.prepare("UPDATE devices SET updated_at = ? WHERE id = ?").run([.integer(now), .integer(id)])
            }
            return devices.count
        }
    }

    /// A device's tags, by app and hwid; a user's, by app and user id (oldest device first).
    static let tagsOfDevice = "SELECT t.name, t.type, t.num, t.str FROM devices d JOIN device_tags t ON t.device_id = d.id WHERE d.app_id = ?1 AND d.hwid = ?2"
    static let tagsOfUser = """
        SELECT t.name, t.type, t.num, t.str FROM devices d JOIN device_tags t ON t.device_id = d.id
        WHERE d.app_id = ?1 AND d.user_id = ?2 ORDER BY d.updated_at, d.id
        """

    public func getTags(app: String, hwid: String?, userID: String?) throws(StoreError) -> [String: TagValue] {
        let appID = try appID(app)
        // One statement, so it needs no snapshot of its own (getTags is the hottest read).
        // A user's devices come oldest first, so that the most recently updated one's value wins.
        let device: (sql: String, key: String)
        if let hwid {
            device = (Self.tagsOfDevice, hwid)
        } else if let userID {
            device = (Self.tagsOfUser, userID)
        } else {
            return [:]
        }
        return try database.readLatest { connection in
            try connection.prepare(device.sql).rows([.integer(appID), .text(device.key)], into: [String: TagValue]()) { tags, row in
                tags[row.text(0)] = TagType(rawValue: Int(row.int(1))).flatMap {
                    TagValue.fromStorage(type: $0, number: row.value(2), text: row.optionalText(3))
                }
            }
        }
    }

    public func addTag(app: String, name: String, type: TagType, now: Int64) throws(StoreError) -> TagType? {
        let appID = try appID(app)
        return try write { writer in
            if let existing = try tagType(writer, appID: appID, name: name) { return existing }
            try writer.connection.prepare("INSERT INTO tag_definitions (app_id, name, type, created_at) VALUES (?, ?, ?, ?)")
                .run([.integer(appID), .text(name), .integer(Int64(type.rawValue)), .integer(now)])
            writer.tagTypes[appID, default: [:]][name] = type
            return nil
        }
    }

    public func deleteTag(app: String, name: String) throws(StoreError) -> Bool {
        let appID = try appID(app)
        return try write { writer in
            let connection = writer.connection
            // The values are keyed by device first: found through the app's devices, one key lookup each.
            for table in ["device_tag_items", "device_tags"] {
                try connection.prepare("DELETE FROM \(table) WHERE name = ?2 AND device_id IN (SELECT id FROM devices WHERE app_id = ?1)")
                    .run([.integer(appID), .text(name)])
            }
            if name == "badge" { try connection.prepare("UPDATE devices SET badge = 0 WHERE app_id = ? AND badge != 0").run([.integer(appID)]) }
            let deleted = try connection.prepare("DELETE FROM tag_definitions WHERE app_id = ? AND name = ? RETURNING type")
                .first([.integer(appID), .text(name)]) { $0.int(0) } != nil
            writer.tagTypes[appID]?[name] = nil
            return deleted
        }
    }

    public func registerUser(app: String, hwid: String, attributes: DeviceAttributes, userID: String, now: Int64) throws(StoreError) {
        let appID = try appID(app)
        var attributes = attributes
        attributes.userID = userID
        try write { writer in
            _ = try upsertDevice(writer.connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try upsertUser(writer.connection, appID: appID, userID: userID, now: now)
        }
    }

    public func mergeUser(app: String, oldUserID: String, newUserID: String, merge: Bool, now: Int64) throws(StoreError) {
        let appID = try appID(app)
        guard oldUserID != newUserID else { return }
        try write { writer in
            let connection = writer.connection
            if merge {
                try upsertUser(connection, appID: appID, userID: newUserID, now: now)
                try connection.prepare("UPDATE devices SET user_id = ?, updated_at = ? WHERE app_id = ? AND user_id = ?")
                    .run([.text(newUserID), .integer(now), .integer(appID), .text(oldUserID)])
            } else {
                try connection.prepare("UPDATE devices SET user_id = NULL, updated_at = ? WHERE app_id = ? AND user_id = ?")
                    .run([.integer(now), .integer(appID), .text(oldUserID)])
            }
            try connection.prepare("DELETE FROM users WHERE app_id = ? AND user_id = ?").run([.integer(appID), .text(oldUserID)])
        }
    }

    public func setSubscribed(app: String, hwid: String, subscribed: Bool, now: Int64) throws(StoreError) {
        let appID = try appID(app)
        try write { writer in
            try writer.connection.prepare("UPDATE devices SET subscribed = ?, updated_at = ? WHERE app_id = ? AND hwid = ?")
                .run([.integer(subscribed ? 1 : 0), .integer(now), .integer(appID), .text(hwid)])
            guard writer.connection.changes == 1 else { throw StoreError.unknownDevice(hwid) }
        }
    }

    public func registerByToken(app: String, pushToken: String, attributes: DeviceAttributes, newHWID: String,
                                now: Int64) throws(StoreError) -> String {
        let appID = try appID(app)
        return try write { writer in
            let connection = writer.connection
            let existing = try connection.prepare(
                """
                SELECT hwid FROM devices WHERE app_id = ?1 AND substr(push_token, 1, 16) = substr(?2, 1, 16) AND push_token = ?2
                  AND push_token IS NOT NULL ORDER BY updated_at DESC LIMIT 1
                """
            ).first([.integer(appID), .text(pushToken)]) { $0.text(0) }
            let hwid = existing ?? newHWID
            let id = try upsertDevice(connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try connection.prepare("UPDATE devices SET push_token = ?, token_invalid_reason = NULL, subscribed = 1 WHERE id = ?")
                .run([.text(pushToken), .integer(id)])
            return hwid
        }
    }

    public func record(_ reports: [SDKReport], now: Int64) throws(StoreError) {
        var ids: [Int64] = []
        for report in reports { ids.append(try appID(report.app)) }
        // One report is one INSERT, which SQLite undoes by itself when it fails.
        try write(oneStatement: reports.count == 1) { writer in try Self.insert(reports, appIDs: ids, now: now, writer.connection) }
    }

    /// Inserts reports into `reports` (the caller's transaction); `appIDs` in the same order.
    static func insert(_ reports: [SDKReport], appIDs: [Int64], now: Int64, _ connection: SQLiteConnection) throws {
        let insert = try connection.prepare(
            """
            INSERT INTO reports (app_id, kind, hwid, user_id, platform, name, hash, body, timestamp_utc,
              timestamp_current, received_at, occurred_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, coalesce(?9, ?11))
            """)
        for (report, appID) in zip(reports, appIDs) {
            try insert.run { parameters in
                parameters.append(.integer(appID))
                parameters.append(.text(report.kind.rawValue))
                parameters.append(.text(report.hwid))
                parameters.append(.optional(report.userID))
                parameters.append(.optional(report.platform))
                parameters.append(.optional(report.name))
                parameters.append(.optional(report.hash))
                parameters.append(.text(report.bodyText))
                parameters.append(.optional(report.timestampUTC))
                parameters.append(.optional(report.timestampCurrent))
                parameters.append(.integer(now))
            }
        }
    }

    public func device(app: String, hwid: String) throws(StoreError) -> DeviceRecord? {
        let appID = try appID(app)
        return try read { connection in
            try connection.prepare(
                """
                SELECT \(DeviceRecord.columns)
                FROM devices WHERE app_id = ? AND hwid = ?
                """
            ).first([.integer(appID), .text(hwid)]) { row in
                DeviceRecord(row: row)
            }
        }
    }

    public func reports(app: String, limit: Int) throws(StoreError) -> [SDKReport] {
        let appID = try appID(app)
        return try read { connection in
            try connection.prepare(
                """
                SELECT \(SDKReport.columns)
                FROM reports WHERE app_id = ? ORDER BY id LIMIT ?
                """
            ).rows([.integer(appID), .integer(Int64(limit))]) { row in
                SDKReport(app: app, row: row)
            }
        }
    }

    public func hasApplication(_ code: String) -> Bool { database.appIDs[code] != nil }

    public func ping() throws(StoreError) {
        try read { connection in
            _ = try connection.prepare("SELECT count(*) FROM applications").first { $0.int(0) }
        }
    }
}
