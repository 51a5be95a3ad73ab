import Core
import StoreCore

/// `DeviceStore` on PostgreSQL. Each call is one transaction of a few statements: the device row
/// in one upsert, and a request's tags in one multi-row statement per table. Registrations and
/// setTags calls whose tags are of known types (see `batchable`), applicationOpen, registerUser,
/// unregisterDevice, setSubscribed and reports are written many per statement (`DeviceWriteBatcher`);
/// getTags of a device is read with those of other devices (`TagReadBatcher`).
public final class PostgresDeviceStore: DeviceStore {
    let database: PostgresDatabase
    private let batcher: DeviceWriteBatcher
    private let tagReads: TagReadBatcher

    public init(database: PostgresDatabase) {
        self.database = database
        tagReads = TagReadBatcher(database: database)
        let single = Single()
        batcher = DeviceWriteBatcher(database: database) { item throws(StoreError) in try single.store?.writeAlone(item) }
        single.store = self
    }

    deinit { batcher.stop() }

    /// Runs a whole request on the device write batcher's thread (see `DeviceWriteBatcher`).
    func submit(_ request: DeviceWriteBatcher.Request) {
        batcher.submit(request)
    }

    /// The store as the batcher's way back to the one-registration path, without a reference cycle.
    /// `@unchecked Sendable` invariant: set once in `init`, before the batcher can use it.
    private final class Single: @unchecked Sendable {
        weak var store: PostgresDeviceStore?
    }

    /// The parameters `$1`…`$12` shared by the device upserts (see `DeviceColumns`).
    private static func values(appID: Int64, hwid: String, _ a: DeviceAttributes, now: Int64) -> [PostgresValue] {
        DeviceColumns.values(appID: appID, hwid: hwid, a, now: now)
    }

    /// `$n` for an attribute's parameter.
    static func parameter(_ attribute: DeviceColumns.Attribute) -> String { "$\(attribute.parameter)" }

    /// An upsert's conflict clause: the attributes after the device type as the insert gives them,
    /// those left out kept.
    static let keptOnConflict = DeviceColumns.kept(DeviceColumns.optionalAttributes, given: { "excluded.\($0.name)" },
                                                   stored: { "devices.\($0.name)" })

    /// Why a call that needs an existing device fails when the device is new.
    static let unregistered = "device_type is required for a device Herald has not seen (register it first)"

    /// Updates the device's attributes when they changed (an unchanged device is not rewritten);
    /// returns its id, or nil when there is no such device.
    static let updateDevice = """
        WITH existing AS (SELECT id FROM devices WHERE app_id = $1 AND hwid = $2),
        updated AS (
          UPDATE devices d SET \(DeviceColumns.kept(DeviceColumns.attributes, given: parameter, stored: { "d.\($0.name)" })), updated_at = $12
          FROM existing e WHERE d.id = e.id
            AND (\(DeviceColumns.changed(DeviceColumns.attributes, given: parameter, stored: { "d.\($0.name)" }, differs: "IS DISTINCT FROM")))
          RETURNING d.id)
        SELECT id FROM existing
        """

    /// Updates the device's attributes, creating it when new; returns its id.
    func upsertDevice(_ connection: PostgresConnection, appID: Int64, hwid: String, attributes a: DeviceAttributes,
                      now: Int64) throws -> Int64 {
        let values = Self.values(appID: appID, hwid: hwid, a, now: now)
        if a == DeviceAttributes() {
            // Nothing to update (setTags usually sends no attributes).
            if let id = try connection.first("SELECT id FROM devices WHERE app_id = $1 AND hwid = $2", [.integer(appID), .text(hwid)], {
                $0.int(0)
            }) {
                return id
            }
        } else if let id = try connection.first(Self.updateDevice, values, { $0.int(0) }) {
            return id
        }
        guard a.platform != nil else {
            throw StoreError.invalid(Self.unregistered)
        }
        // A concurrent first call for the same device inserts it first: then this one updates it.
        return try connection.first(
            """
            INSERT INTO devices (\(DeviceColumns.inserted)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
            ON CONFLICT (app_id, hwid) DO UPDATE SET platform = excluded.platform, \(Self.keptOnConflict), updated_at = excluded.updated_at
            RETURNING id
            """, values) { $0.int(0) }!
    }

    /// registerDevice in one statement: update what changed (attributes, token, gateway,
    /// subscription) or insert the device. Unchanged devices are not rewritten, and an existing
    /// device never draws a new id from the sequence (so that shards, cut by id range, stay dense).
    static let registration = """
        WITH existing AS (SELECT id FROM devices WHERE app_id = $1 AND hwid = $2),
        updated AS (
          UPDATE devices d SET platform = $3,
            \(DeviceColumns.kept(DeviceColumns.optionalAttributes, given: parameter, stored: { "d.\($0.name)" })),
            updated_at = $12, push_token = $13, gateway = COALESCE($14, d.gateway), web_p256dh = $15, web_auth = $16,
            subscribed = true, token_invalid_reason = NULL
          FROM existing e WHERE d.id = e.id AND ($3 IS DISTINCT FROM d.platform
            OR \(DeviceColumns.changed(DeviceColumns.optionalAttributes, given: parameter, stored: { "d.\($0.name)" }, differs: "IS DISTINCT FROM"))
            OR $13 IS DISTINCT FROM d.push_token OR COALESCE($14, d.gateway) IS DISTINCT FROM d.gateway
            OR $15 IS DISTINCT FROM d.web_p256dh OR $16 IS DISTINCT FROM d.web_auth OR NOT d.subscribed
            OR d.token_invalid_reason IS NOT NULL)
          RETURNING d.id),
        inserted AS (
          INSERT INTO devices (\(DeviceColumns.registered))
          SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14, $15, $16 WHERE NOT EXISTS (SELECT 1 FROM existing)
          ON CONFLICT (app_id, hwid) DO UPDATE SET platform = excluded.platform, \(keptOnConflict),
            updated_at = excluded.updated_at, push_token = excluded.push_token, gateway = COALESCE(excluded.gateway, devices.gateway),
            web_p256dh = excluded.web_p256dh, web_auth = excluded.web_auth, subscribed = true, token_invalid_reason = NULL
          RETURNING id)
        SELECT id FROM existing UNION ALL SELECT id FROM inserted
        """

    func upsertRegistration(_ connection: PostgresConnection, appID: Int64, registration: DeviceRegistration, now: Int64) throws -> Int64 {
        guard registration.attributes.platform != nil else {
            throw StoreError.invalid("device_type is required")
        }
        let values: [PostgresValue] = DeviceColumns.values(appID: appID, registration, now: now)
        guard let id = try connection.first(Self.registration, values, { $0.int(0) }) else {
            throw StoreError.invalid("device vanished during registration")
        }
        return id
    }

    func upsertUser(_ connection: PostgresConnection, appID: Int64, userID: String, now: Int64) throws {
        try connection.run("INSERT INTO users (app_id, user_id, created_at, updated_at) VALUES ($1, $2, $3, $3) ON CONFLICT DO NOTHING",
                           [.integer(appID), .text(userID), .integer(now)])
    }

    /// Applies `updates` to one device inside the caller's transaction: the current values the
    /// operations need in one query, then each table written in one statement.
    func applyTags(_ transaction: PostgresTransaction, appID: Int64, deviceID: Int64, updates: [TagUpdate]) throws {
        guard !updates.isEmpty else { return }
        let connection = transaction.connection
        var current: [String: TagValue] = [:]
        let reading = updates.filter {
            switch $0.operation {
            case .increment, .append, .remove: return true
            case .set, .delete: return false
            }
        }.map(\.name)
        if !reading.isEmpty {
            for (name, value) in try connection.rows(
                "SELECT name, type, num::text, str FROM device_tags WHERE device_id = $1 AND name = ANY($2::text[])",
                [.integer(deviceID), .texts(reading)], { row in (row.text(0), TagValue.fromStorage(row, typeColumn: 1)) }) {
                current[name] = value
            }
        }
        // The outcome per tag, in order (a later update of the same tag sees the earlier one's value).
        var next: [String: TagValue?] = [:]
        var order: [String] = []
        var listTags: Set<String> = []
        for update in updates {
            var type = try database.tagType(transaction, appID: appID, name: update.name)
            var value = try TagRules.apply(update.operation, name: update.name, to: current[update.name], type: type)
            if type == nil, let defined = value?.type {
                // Another transaction may define the tag meanwhile: its type wins, as if it had come first.
                let stored = try connection.first(
                    """
                    INSERT INTO tag_definitions (app_id, name, type, created_at) VALUES ($1, $2, $3, extract(epoch FROM now())::bigint)
                    ON CONFLICT (app_id, name) DO UPDATE SET type = tag_definitions.type RETURNING type
                    """, [.integer(appID), .text(update.name), .integer(Int64(defined.rawValue))]) { TagType(rawValue: Int($0.int(0))) } ?? nil
                type = stored ?? defined
                if type != defined {
                    value = try TagRules.apply(update.operation, name: update.name, to: current[update.name], type: type)
                }
                transaction.definedTags[appID, default: [:]][update.name] = type
            }
            if (type ?? value?.type) == .list { listTags.insert(update.name) }
            if next[update.name] == nil { order.append(update.name) }
            next[update.name] = .some(value)
            current[update.name] = value
        }
        let removed = order.filter { next[$0]! == nil }
        let kept = order.compactMap { name in next[name]!.map { (name, $0) } }
        if !listTags.isEmpty {
            try connection.run("DELETE FROM device_tag_items WHERE device_id = $1 AND name = ANY($2::text[])",
                               [.integer(deviceID), .texts(listTags.sorted())])
        }
        if !removed.isEmpty {
            try connection.run("DELETE FROM device_tags WHERE device_id = $1 AND name = ANY($2::text[])",
                               [.integer(deviceID), .texts(removed)])
        }
        if !kept.isEmpty {
            try connection.run(
                """
                INSERT INTO device_tags (device_id, name, app_id, type, num, str)
                SELECT $1::bigint, u.name, $2::bigint, u.type, u.num, u.str
                FROM unnest($3::text[], $4::integer[], $5::numeric[], $6::text[]) AS u(name, type, num, str)
                ON CONFLICT (device_id, name) DO UPDATE SET type = excluded.type, num = excluded.num, str = excluded.str
                WHERE device_tags.type IS DISTINCT FROM excluded.type OR device_tags.num IS DISTINCT FROM excluded.num
                  OR device_tags.str IS DISTINCT FROM excluded.str
                """,
                [.integer(deviceID), .integer(appID), .texts(kept.map(\.0)), .integers(kept.map { Int64($0.1.type.rawValue) }),
                 .texts(kept.map(\.1.storedNumber)), .texts(kept.map(\.1.storedText))])
        }
        var items: [(String, String)] = []
        for (name, value) in kept {
            if case .list(let list) = value { items += list.map { (name, $0) } }
        }
        if !items.isEmpty {
            try connection.run(
                """
                INSERT INTO device_tag_items (device_id, name, item, app_id)
                SELECT $1::bigint, u.name, u.item, $2::bigint FROM unnest($3::text[], $4::text[]) AS u(name, item)
                ON CONFLICT DO NOTHING
                """, [.integer(deviceID), .integer(appID), .texts(items.map(\.0)), .texts(items.map(\.1))])
        }
        if let badge = next["badge"] {
            var count: Int64 = 0
            if case .integer(let value)? = badge { count = value }
            try connection.run("UPDATE devices SET badge = $1 WHERE id = $2", [.integer(count), .integer(deviceID)])
        }
    }

    // MARK: - DeviceStore

    public func registerDevice(_ registration: DeviceRegistration, now: Int64) throws(StoreError) {
        let appID = try database.appID(registration.app)
        if registration.attributes.platform != nil, let tags = try batchable(registration.tags, appID: appID), tags.badge == nil {
            try batcher.register([DeviceWriteBatcher.Item(appID: appID, write: .registration(registration), tags: tags, now: now)])
        } else {
            try registerAlone(appID: appID, registration: registration, now: now)
        }
    }

    /// A call's tag updates as the batch statement writes them.
    struct BatchTags: Sendable {
        /// Tag values to set.
        var values: [(name: String, value: TagValue)] = []
        /// Integer tags to increment, and by how much.
        var steps: [(name: String, step: Int64)] = []
        /// Decimal tags to increment, and by how much.
        var decimalSteps: [(name: String, step: Double)] = []
        /// List tags whose `items` are appended, or removed.
        var edits: [(name: String, remove: Bool, items: [String])] = []
        /// The `badge` tag's value when it is set (it is in `values` too): the device's badge.
        var badge: Int64?

        /// Whether the outcome depends on the stored value, so that the same write made twice
        /// differs from once (the batch holding it then commits in a transaction, see `DeviceWriteBatcher`).
        var isRelative: Bool { !steps.isEmpty || !decimalSteps.isEmpty || !edits.isEmpty }
    }

    /// The tags as the batcher writes them, each tag once and of a known type: set operations,
    /// increments of integer and decimal tags, appends to and removals from list tags, and the
    /// `badge` tag set to an integer. Nil when they must take the ordinary path; throws when a
    /// value set does not fit its type.
    func batchable(_ updates: [TagUpdate], appID: Int64) throws(StoreError) -> BatchTags? {
        var tags = BatchTags()
        var names: Set<String> = []
        for update in updates {
            guard names.insert(update.name).inserted, let type = database.cachedTagType(appID: appID, name: update.name) else { return nil }
            switch update.operation {
            case .set:
                let value: TagValue?
                do {
                    value = try TagRules.apply(update.operation, name: update.name, to: nil, type: type)
                } catch {
                    throw .invalid(error.message)
                }
                guard let value else { return nil }
                if update.name == "badge" {
                    guard case .integer(let badge) = value else { return nil }
                    tags.badge = badge
                }
                tags.values.append((update.name, value))
            case .increment(let amount) where update.name != "badge":
                switch type {
                case .integer:
                    guard let step = amount.lenientInt else { return nil }
                    tags.steps.append((update.name, step))
                case .decimal:
                    // As `TagRules.apply`: an amount that is not a number adds nothing.
                    let step = amount.lenientDouble ?? 0
                    guard step.isFinite else { return nil }
                    tags.decimalSteps.append((update.name, step))
                default:
                    return nil
                }
            case .append(let items) where type == .list && update.name != "badge":
                // As `TagRules.apply` refuses them: the batch statement writes the items as they are.
                do {
                    try TagRules.checkListItems(items, field: "tags.\(update.name)")
                } catch {
                    throw .invalid(error.message)
                }
                tags.edits.append((update.name, false, items))
            case .remove(let items) where type == .list && update.name != "badge":
                tags.edits.append((update.name, true, items))
            case .increment, .append, .remove, .delete:
                return nil
            }
        }
        return tags
    }

    /// A write of a batch that failed, made on its own.
    func writeAlone(_ item: DeviceWriteBatcher.Item) throws(StoreError) {
        switch item.write {
        case .registration(let registration):
            try registerAlone(appID: item.appID, registration: registration, now: item.now)
        case .tags(let hwid, let attributes, let updates):
            try setTagsAlone(appID: item.appID, hwid: hwid, attributes: attributes, updates: updates, now: item.now)
        case .open(let hwid, let attributes):
            try openAlone(appID: item.appID, hwid: hwid, attributes: attributes, now: item.now)
        case .user(let hwid, let userID, let attributes):
            try registerUserAlone(appID: item.appID, hwid: hwid, userID: userID, attributes: attributes, now: item.now)
        case .unregistration(let hwid):
            try unregisterAlone(appID: item.appID, hwid: hwid, now: item.now)
        case .subscription(let hwid, let subscribed):
            try subscribeAlone(appID: item.appID, hwid: hwid, subscribed: subscribed, now: item.now)
        case .report(let report):
            try database.write { transaction in try Self.insert([report], appIDs: [item.appID], now: item.now, transaction.connection) }
        }
    }

    /// registerDevice in a transaction of its own.
    private func registerAlone(appID: Int64, registration: DeviceRegistration, now: Int64) throws(StoreError) {
        try database.write { transaction in
            let connection = transaction.connection
            let id = try upsertRegistration(connection, appID: appID, registration: registration, now: now)
            if let userID = registration.attributes.userID {
                try upsertUser(connection, appID: appID, userID: userID, now: now)
            }
            try applyTags(transaction, appID: appID, deviceID: id, updates: registration.tags)
        }
    }

    public func unregisterDevice(app: String, hwid: String, now: Int64) throws(StoreError) {
        let appID = try database.appID(app)
        try batcher.register([DeviceWriteBatcher.Item(appID: appID, write: .unregistration(hwid: hwid), now: now)])
    }

    /// unregisterDevice in a transaction of its own.
    private func unregisterAlone(appID: Int64, hwid: String, now: Int64) throws(StoreError) {
        try database.write { transaction in
            try transaction.connection.run("UPDATE devices SET push_token = NULL, web_p256dh = NULL, web_auth = NULL, updated_at = $1 WHERE app_id = $2 AND hwid = $3",
                                           [.integer(now), .integer(appID), .text(hwid)])
        }
    }

    public func deleteDevice(app: String, hwid: String, now: Int64) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        return try database.write { transaction in
            let connection = transaction.connection
            guard let id = try connection.first(Self.anonymize, [.integer(appID), .text(hwid), .integer(now)], { $0.int(0) }) else {
                return false
            }
            for table in ["device_tags", "device_tag_items", "live_activity_tokens", "inbox_statuses"] {
                try connection.run("DELETE FROM \(table) WHERE device_id = $1", [.integer(id)])
            }
            return true
        }
    }

    /// deleteDevice's row: everything that identifies the device or its user cleared, a random hwid
    /// that no SDK sends (parameters: application id, hwid, time).
    static let anonymize = """
        UPDATE devices SET hwid = 'deleted:' || replace(gen_random_uuid()::text, '-', ''), push_token = NULL, gateway = NULL,
          web_p256dh = NULL, web_auth = NULL, language = NULL, timezone_offset = NULL, os_version = NULL, device_model = NULL,
          sdk_version = NULL, user_id = NULL, notification_types = NULL, subscribed = false, badge = 0, last_open_at = NULL,
          token_invalid_reason = NULL, updated_at = $3
        WHERE app_id = $1 AND hwid = $2
        RETURNING id
        """

    public func applicationOpen(app: String, hwid: String, attributes: DeviceAttributes, now: Int64) throws(StoreError) {
        let appID = try database.appID(app)
        try batcher.register([DeviceWriteBatcher.Item(appID: appID, write: .open(hwid: hwid, attributes: attributes), now: now)])
    }

    /// applicationOpen in a transaction of its own.
    private func openAlone(appID: Int64, hwid: String, attributes: DeviceAttributes, now: Int64) throws(StoreError) {
        try database.write { transaction in
            let id = try upsertDevice(transaction.connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try transaction.connection.run("UPDATE devices SET last_open_at = $1 WHERE id = $2", [.integer(now), .integer(id)])
        }
    }

    public func setTags(app: String, hwid: String, attributes: DeviceAttributes, updates: [TagUpdate], now: Int64) throws(StoreError) {
        let appID = try database.appID(app)
        if let tags = try batchable(updates, appID: appID) {
            try batcher.register([DeviceWriteBatcher.Item(appID: appID, write: .tags(hwid: hwid, attributes: attributes, updates: updates),
                                                           tags: tags, now: now)])
        } else {
            try setTagsAlone(appID: appID, hwid: hwid, attributes: attributes, updates: updates, now: now)
        }
    }

    /// setTags in a transaction of its own.
    private func setTagsAlone(appID: Int64, hwid: String, attributes: DeviceAttributes, updates: [TagUpdate], now: Int64) throws(StoreError) {
        try database.write { transaction in
            let id = try upsertDevice(transaction.connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try applyTags(transaction, appID: appID, deviceID: id, updates: updates)
        }
    }

    public func getTags(app: String, hwid: String?, userID: String?) throws(StoreError) -> [String: TagValue] {
        let appID = try database.appID(app)
        if let hwid { return try tagReads.tags(appID: appID, hwid: hwid) }
        guard let userID else { return [:] }
        // One statement, so one snapshot without a transaction around it. A user's devices come
        // oldest first, so that the most recently updated one's value wins.
        return try database.read { connection in
            var tags: [String: TagValue] = [:]
            let rows = try connection.rows(
                """
                SELECT t.name, t.type, t.num::text, t.str FROM devices d JOIN device_tags t ON t.device_id = d.id
                WHERE d.app_id = $1 AND d.user_id = $2 ORDER BY d.updated_at, d.id
                """,
                [.integer(appID), .text(userID)]
            ) { row in (row.text(0), TagValue.fromStorage(row, typeColumn: 1)) }
            for (name, value) in rows { tags[name] = value }
            return tags
        }
    }

    /// Read with the other getTags calls waiting (`TagReadBatcher`), and answered from the thread
    /// that ran the statement.
    public func getTags(app: String, hwid: String, answer: @escaping @Sendable (Result<[String: TagValue], StoreError>) -> Void) {
        do {
            tagReads.tags(appID: try database.appID(app), hwid: hwid, answer: answer)
        } catch {
            answer(.failure(error))
        }
    }

    public func setUserTags(app: String, userID: String, updates: [TagUpdate], now: Int64) throws(StoreError) -> Int {
        let appID = try database.appID(app)
        return try database.write { transaction in
            let devices = try transaction.connection.rows(
                "UPDATE devices SET updated_at = $3 WHERE app_id = $1 AND user_id = $2 RETURNING id",
                [.integer(appID), .text(userID), .integer(now)]) { $0.int(0) }
            for id in devices.sorted() { try applyTags(transaction, appID: appID, deviceID: id, updates: updates) }
            return devices.count
        }
    }

    public func addTag(app: String, name: String, type: TagType, now: Int64) throws(StoreError) -> TagType? {
        let appID = try database.appID(app)
        return try database.write { transaction in
            let created = try transaction.connection.first(
                "INSERT INTO tag_definitions (app_id, name, type, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (app_id, name) DO NOTHING RETURNING type",
                [.integer(appID), .text(name), .integer(Int64(type.rawValue)), .integer(now)]) { _ in true } ?? false
            return created ? nil : try database.tagType(transaction, appID: appID, name: name) ?? type
        }
    }

    public func deleteTag(app: String, name: String) throws(StoreError) -> Bool {
        let appID = try database.appID(app)
        let deleted = try database.write { transaction in
            let connection = transaction.connection
            try connection.run("DELETE FROM device_tag_items WHERE app_id = $1 AND name = $2", [.integer(appID), .text(name)])
            try connection.run("DELETE FROM device_tags WHERE app_id = $1 AND name = $2", [.integer(appID), .text(name)])
            if name == "badge" { try connection.run("UPDATE devices SET badge = 0 WHERE app_id = $1 AND badge <> 0", [.integer(appID)]) }
            return try connection.run("DELETE FROM tag_definitions WHERE app_id = $1 AND name = $2", [.integer(appID), .text(name)]) > 0
        }
        database.forgetTagType(appID: appID, name: name)
        return deleted
    }

    public func registerUser(app: String, hwid: String, attributes: DeviceAttributes, userID: String, now: Int64) throws(StoreError) {
        let appID = try database.appID(app)
        try batcher.register([DeviceWriteBatcher.Item(appID: appID, write: .user(hwid: hwid, userID: userID, attributes: attributes), now: now)])
    }

    /// registerUser in a transaction of its own.
    private func registerUserAlone(appID: Int64, hwid: String, userID: String, attributes: DeviceAttributes, now: Int64) throws(StoreError) {
        var attributes = attributes
        attributes.userID = userID
        try database.write { transaction in
            _ = try upsertDevice(transaction.connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try upsertUser(transaction.connection, appID: appID, userID: userID, now: now)
        }
    }

    public func mergeUser(app: String, oldUserID: String, newUserID: String, merge: Bool, now: Int64) throws(StoreError) {
        let appID = try database.appID(app)
        guard oldUserID != newUserID else { return }
        try database.write { transaction in
            let connection = transaction.connection
            if merge {
                try upsertUser(connection, appID: appID, userID: newUserID, now: now)
                try connection.run("UPDATE devices SET user_id = $1, updated_at = $2 WHERE app_id = $3 AND user_id = $4",
                                   [.text(newUserID), .integer(now), .integer(appID), .text(oldUserID)])
            } else {
                try connection.run("UPDATE devices SET user_id = NULL, updated_at = $1 WHERE app_id = $2 AND user_id = $3",
                                   [.integer(now), .integer(appID), .text(oldUserID)])
            }
            try connection.run("DELETE FROM users WHERE app_id = $1 AND user_id = $2", [.integer(appID), .text(oldUserID)])
        }
    }

    public func setSubscribed(app: String, hwid: String, subscribed: Bool, now: Int64) throws(StoreError) {
        let appID = try database.appID(app)
        try batcher.register([DeviceWriteBatcher.Item(appID: appID, write: .subscription(hwid: hwid, subscribed: subscribed), now: now)])
    }

    /// setSubscribed in a transaction of its own.
    private func subscribeAlone(appID: Int64, hwid: String, subscribed: Bool, now: Int64) throws(StoreError) {
        try database.write { transaction in
            let changed = try transaction.connection.run(
                "UPDATE devices SET subscribed = $1, updated_at = $2 WHERE app_id = $3 AND hwid = $4",
                [.boolean(subscribed), .integer(now), .integer(appID), .text(hwid)])
            guard changed == 1 else { throw StoreError.unknownDevice(hwid) }
        }
    }

    public func registerByToken(app: String, pushToken: String, attributes: DeviceAttributes, newHWID: String,
                                now: Int64) throws(StoreError) -> String {
        let appID = try database.appID(app)
        return try database.write { transaction in
            let connection = transaction.connection
            let existing = try connection.first(
                """
                SELECT hwid FROM devices WHERE app_id = $1 AND left(push_token, 16) = left($2, 16) AND push_token = $2
                ORDER BY updated_at DESC LIMIT 1
                """, [.integer(appID), .text(pushToken)]) { $0.text(0) }
            let hwid = existing ?? newHWID
            let id = try upsertDevice(connection, appID: appID, hwid: hwid, attributes: attributes, now: now)
            try connection.run("UPDATE devices SET push_token = $1, token_invalid_reason = NULL, subscribed = true WHERE id = $2",
                               [.text(pushToken), .integer(id)])
            return hwid
        }
    }

    public func record(_ reports: [SDKReport], now: Int64) throws(StoreError) {
        var items: [DeviceWriteBatcher.Item] = []
        for report in reports {
            items.append(DeviceWriteBatcher.Item(appID: try database.appID(report.app), write: .report(report), now: now))
        }
        try batcher.register(items)
    }

    /// Inserts reports into `reports` (the caller's transaction) in one multi-row statement, in
    /// the order given (ids follow it); `appIDs` in the same order.
    static func insert(_ reports: [SDKReport], appIDs: [Int64], now: Int64, _ connection: PostgresConnection) throws {
        try connection.run(reportsInsert(from: 1),
                           reportColumns(reports, appIDs: appIDs, receivedAt: Array(repeating: now, count: reports.count)))
    }

    /// An INSERT of the reports in the eleven parallel arrays `reportColumns` makes, bound from
    /// `$first` on, in their order (ids follow it).
    static func reportsInsert(from first: Int) -> String {
        let p = (first..<first + 11).map { "$\($0)" }
        return """
            INSERT INTO reports (app_id, kind, hwid, user_id, platform, name, hash, body, timestamp_utc, timestamp_current,
              received_at, occurred_at)
            SELECT u.app_id, u.kind, u.hwid, u.user_id, u.platform, u.name, u.hash, u.body, u.utc, u.local, u.received,
              coalesce(u.utc, u.received)
            FROM unnest(\(p[0])::bigint[], \(p[1])::text[], \(p[2])::text[], \(p[3])::text[], \(p[4])::integer[], \(p[5])::text[],
              \(p[6])::text[], \(p[7])::text[], \(p[8])::bigint[], \(p[9])::bigint[], \(p[10])::bigint[])
              WITH ORDINALITY AS u(app_id, kind, hwid, user_id, platform, name, hash, body, utc, local, received, n)
            ORDER BY u.n
            """
    }

    /// The parameters of `reportsInsert`: each report with its application's id and when it was received.
    static func reportColumns(_ reports: [SDKReport], appIDs: [Int64], receivedAt: [Int64]) -> [PostgresValue] {
        [
            .integers(appIDs), .texts(reports.map(\.kind.rawValue)), .texts(reports.map(\.hwid)), .texts(reports.map(\.userID)),
            .texts(reports.map { $0.platform.map { String($0) } }), .texts(reports.map(\.name)), .texts(reports.map(\.hash)),
            .texts(reports.map(\.bodyText)), .texts(reports.map { $0.timestampUTC.map { String($0) } }),
            .texts(reports.map { $0.timestampCurrent.map { String($0) } }), .integers(receivedAt),
        ]
    }

    public func device(app: String, hwid: String) throws(StoreError) -> DeviceRecord? {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.first(
                """
                SELECT \(DeviceRecord.columns)
                FROM devices WHERE app_id = $1 AND hwid = $2
                """, [.integer(appID), .text(hwid)]
            ) { row in
                DeviceRecord(row: row)
            }
        }
    }

    public func reports(app: String, limit: Int) throws(StoreError) -> [SDKReport] {
        let appID = try database.appID(app)
        return try database.read { connection in
            try connection.rows(
                """
                SELECT \(SDKReport.columns)
                FROM reports WHERE app_id = $1 ORDER BY id LIMIT $2
                """, [.integer(appID), .integer(Int64(limit))]
            ) { row in
                SDKReport(app: app, row: row)
            }
        }
    }

    public func hasApplication(_ code: String) -> Bool { database.appIDs[code] != nil }

    /// Waits for the server's answer no longer than `probeTimeout` (`busy_timeout_ms`, at least 1 s).
    public func ping() throws(StoreError) {
        try database.read { connection in
            try connection.answering(within: database.probeTimeout) {
                _ = try connection.first("SELECT 1") { $0.int(0) }
            }
        }
    }
}
