import Core
import StoreCore

/// Device writes written together: a registerDevice, or a setTags of a device that exists and is
/// given no attributes, whose tags are set to values of known types, run inside the writer's batch
/// (`submitRequest`), is checked at once and put off (`SQLiteDatabase.Writer.deferWrite`) until the
/// batch's next other write or its commit, whichever comes first. Then all those waiting are
/// written with a few multi-row statements instead of up to three statements and a savepoint each:
/// about a fifth less of SQLite's CPU per registration (`ops/bench/sqlite-batch`), on the writer,
/// which every write waits for. They are written in the order their requests came, as they would
/// be one at a time, and whatever a later request writes or reads on the writer sees them.
struct DeferredWrite {
    enum Device {
        /// registerDevice: the device is inserted, or updated where the registration changes it.
        case registration(DeviceRegistration)
        /// setTags of a device that exists: its row id and hwid, and the attributes the call gives
        /// (the SDKs send some with every call), which update the device where they change it.
        case existing(Int64, hwid: String, attributes: DeviceAttributes)
    }

    let appID: Int64
    let device: Device
    /// The call's tag updates, as a write alone applies them (`applyTags`).
    let updates: [TagUpdate]
    /// What they set: each tag once, to a value of a known type (a list's items included), not the badge.
    let tags: [(name: String, value: TagValue)]
    let now: Int64
    /// Its request's place in the batch (`SQLiteDatabase.batchRequest`), which fails when this write fails.
    let item: Int

    /// The registration's application and hwid, when it is one.
    func registers(appID: Int64, hwid: String) -> Bool {
        guard self.appID == appID, case .registration(let registration) = device else { return false }
        return registration.hwid == hwid
    }

    /// The device and attributes of a setTags that gives some; nil for any other write.
    var givenAttributes: (hwid: String, attributes: DeviceAttributes)? {
        guard case .existing(_, let hwid, let attributes) = device, attributes != DeviceAttributes() else { return nil }
        return (hwid, attributes)
    }

    /// Whether this is a setTags of that device that updates its attributes.
    func updatesAttributes(appID: Int64, hwid: String) -> Bool {
        guard self.appID == appID, case .existing(_, let given, _) = device, given == hwid else { return false }
        return givenAttributes != nil
    }
}

extension SQLiteDeviceStore {
    /// Rows per statement at most; the writes are written in pieces of a power of two rows, so
    /// that the writer's statement cache holds a few shapes instead of one per count.
    static let deferredRows = 64

    /// Puts `registration` off on the writer when it runs inside the writer's batch and its tags
    /// can be written with other writes'; false when it must be written now. Throws what writing it
    /// now would have thrown for a tag value that does not fit its type.
    func deferRegistration(_ registration: DeviceRegistration, appID: Int64, now: Int64) throws(StoreError) -> Bool {
        guard registration.attributes.platform != nil, let (writer, item) = database.batchRequest,
              let tags = try settable(registration.tags, appID: appID, writer) else { return false }
        // A batch writes its registrations before the attributes its setTags give: a setTags of this
        // device put off before this call is written first, so that this registration comes after it.
        if writer.defersAttributes(appID: appID, hwid: registration.hwid) { writer.writeDeferred() }
        writer.deferWrite(DeferredWrite(appID: appID, device: .registration(registration), updates: registration.tags, tags: tags,
                                        now: now, item: item), store: self)
        return true
    }

    /// Puts a setTags off likewise when its device exists; false when it must be written now (a
    /// device not found is registered or refused there).
    func deferTags(hwid: String, attributes: DeviceAttributes, updates: [TagUpdate], appID: Int64, now: Int64) throws(StoreError) -> Bool {
        guard let (writer, item) = database.batchRequest,
              let tags = try settable(updates, appID: appID, writer) else { return false }
        // A registration of the device put off before this call: written first, so that it is found.
        if writer.defersRegistration(appID: appID, hwid: hwid) { writer.writeDeferred() }
        guard !writer.connection.isAutocommit, let id = try? deviceID(writer.connection, appID: appID, hwid: hwid) else { return false }
        writer.deferWrite(DeferredWrite(appID: appID, device: .existing(id, hwid: hwid, attributes: attributes), updates: updates,
                                        tags: tags, now: now, item: item), store: self)
        return true
    }

    /// The values `updates` set, when each sets a tag once to a value of a type already defined,
    /// and is not the badge; nil when they must be applied alone.
    private func settable(_ updates: [TagUpdate], appID: Int64, _ writer: SQLiteDatabase.Writer) throws(StoreError)
        -> [(name: String, value: TagValue)]? {
        var tags: [(name: String, value: TagValue)] = []
        tags.reserveCapacity(updates.count)
        do {
            for update in updates {
                guard case .set = update.operation, update.name != "badge", !tags.contains(where: { $0.name == update.name }),
                      let type = try tagType(writer, appID: appID, name: update.name),
                      let value = try TagRules.apply(update.operation, name: update.name, to: nil, type: type) else { return nil }
                tags.append((update.name, value))
            }
        } catch {
            throw SQLiteDatabase.storeError(error)
        }
        return tags
    }

    /// Writes the writes put off (`deferred`, in their order) in a savepoint; when that fails,
    /// writes each alone, as its call does outside a batch, and marks the request of each that
    /// fails (it is answered as a failed commit). One write is written alone from the start: for a
    /// single row, the batch's statements save nothing and its largest device id costs a query.
    func writeDeferred(_ deferred: [DeferredWrite], _ writer: SQLiteDatabase.Writer) {
        // SQLite rolled the batch back by itself: nothing of it commits (a savepoint now would
        // begin a transaction of its own).
        guard !writer.connection.isAutocommit else {
            for write in deferred { writer.failedItems.insert(write.item) }
            return
        }
        if deferred.count > 1 {
            do {
                try writer.inSavepoint { try writeTogether(deferred, writer.connection) }
                writer.writtenTogether += deferred.count
                return
            } catch {
                // Written one by one below, each failing alone.
            }
        }
        for write in deferred {
            guard !writer.connection.isAutocommit else {
                writer.failedItems.insert(write.item)
                continue
            }
            do {
                try writer.inSavepoint {
                    switch write.device {
                    case .registration(let registration):
                        try register(writer, appID: write.appID, registration: registration, now: write.now)
                    case .existing(_, let hwid, let attributes):
                        let id = try upsertDevice(writer.connection, appID: write.appID, hwid: hwid, attributes: attributes, now: write.now)
                        try applyTags(writer, appID: write.appID, deviceID: id, updates: write.updates)
                    }
                }
            } catch {
                writer.failedItems.insert(write.item)
            }
        }
    }

    /// The registered devices (their ids following the largest before them, or looked up), then
    /// their users, then the attributes setTags give, then every write's tags, then the items of
    /// the lists they set.
    private func writeTogether(_ deferred: [DeferredWrite], _ connection: SQLiteConnection) throws {
        let registrations = deferred.compactMap { write -> (appID: Int64, registration: DeviceRegistration, now: Int64)? in
            guard case .registration(let registration) = write.device else { return nil }
            return (write.appID, registration, write.now)
        }
        // Each registration's device id, in the order of `registrations`.
        var registered: [Int64] = []
        registered.reserveCapacity(registrations.count)
        // Devices inserted below get ids above this one, in the order of their registrations.
        let lastID = registrations.isEmpty ? 0 : try newestDeviceID(connection)
        var largest = lastID
        try Self.inPieces(registrations) { piece in
            // No RETURNING: SQLite runs such a statement into a temporary table first. A new row's
            // id is one above the largest, so when the statement's last insert is `piece.count`
            // above the largest before it, every row was inserted, in order; otherwise each id is
            // looked up (a device left unchanged is never rewritten, so no statement returns it).
            connection.lastInsertRowID = 0
            try connection.prepare(Self.registrations[Self.shape(piece.count)]).run { parameters in
                for registration in piece {
                    DeviceColumns.append(appID: registration.appID, registration.registration, now: registration.now, to: &parameters)
                }
            }
            let inserted = connection.lastInsertRowID
            if inserted > 0, largest <= Int64.max - Int64(piece.count), inserted == largest + Int64(piece.count) {
                registered += (1...Int64(piece.count)).lazy.map { largest + $0 }
            } else {
                for registration in piece {
                    registered.append(try registeredDeviceID(connection, appID: registration.appID, hwid: registration.registration.hwid))
                }
            }
            largest = max(largest, inserted)
        }
        // A device registered twice is new at its first registration only.
        var deviceIDs: [Int64] = []
        deviceIDs.reserveCapacity(deferred.count)
        var newDevices: [NewDevice] = []
        var newest = lastID
        var next = registered.makeIterator()
        for write in deferred {
            guard case .registration(let registration) = write.device else {
                if case .existing(let id, _, _) = write.device { deviceIDs.append(id) }
                continue
            }
            guard let id = next.next() else { throw StoreError.invalid("a registration of the batch has no device id") }
            if id > newest {
                newDevices.append(NewDevice(appID: write.appID, id: id, at: write.now, attributes: registration.attributes, hasToken: true))
                newest = id
            }
            deviceIDs.append(id)
        }
        // Before any change of these devices that may write a later history row (`permission_changed`).
        try Self.recordNew(newDevices, connection)
        let users = registrations.filter { $0.registration.attributes.userID != nil }
        try Self.inPieces(users) { piece in
            try connection.prepare(Self.users[Self.shape(piece.count)]).run { parameters in
                for registration in piece {
                    parameters.append(.integer(registration.appID))
                    parameters.append(.text(registration.registration.attributes.userID ?? ""))
                    parameters.append(.integer(registration.now))
                }
            }
        }
        // Changed attributes, in order (the registrations of those devices come before them).
        let attributed = deferred.filter { $0.givenAttributes != nil }
        if !attributed.isEmpty {
            let update = try connection.prepare(Self.updateDevice)
            for write in attributed {
                guard let (hwid, attributes) = write.givenAttributes else { continue }
                try update.run(DeviceColumns.values(appID: write.appID, hwid: hwid, attributes, now: write.now))
            }
        }
        var tags: [(deviceID: Int64, appID: Int64, name: String, value: TagValue)] = []
        for (write, id) in zip(deferred, deviceIDs) {
            for tag in write.tags { tags.append((id, write.appID, tag.name, tag.value)) }
        }
        try Self.inPieces(tags) { piece in
            try connection.prepare(Self.tagsSet[Self.shape(piece.count)]).run { parameters in
                for tag in piece {
                    parameters.append(.integer(tag.deviceID))
                    parameters.append(.text(tag.name))
                    parameters.append(.integer(tag.appID))
                    parameters.append(.integer(Int64(tag.value.type.rawValue)))
                    parameters.append(tag.value.storedNumber)
                    parameters.append(tag.value.storedText)
                }
            }
        }
        try writeListItems(tags, connection)
    }

    /// A list set in the batch has the items of its last value there, as it would have had the
    /// writes been made one after another: the items it had are deleted, then those are inserted.
    private func writeListItems(_ tags: [(deviceID: Int64, appID: Int64, name: String, value: TagValue)],
                                _ connection: SQLiteConnection) throws {
        struct Key: Hashable {
            let deviceID: Int64
            let name: String
        }
        var lists: [Key: (appID: Int64, items: [String])] = [:]
        var order: [Key] = []
        for tag in tags {
            guard case .list(let items) = tag.value else { continue }
            let key = Key(deviceID: tag.deviceID, name: tag.name)
            if lists.updateValue((tag.appID, items), forKey: key) == nil { order.append(key) }
        }
        guard !order.isEmpty else { return }
        let delete = try connection.prepare(Self.deleteListItems)
        var items: [(key: Key, appID: Int64, item: String)] = []
        for key in order {
            try delete.run([.integer(key.deviceID), .text(key.name)])
            guard let list = lists[key] else { continue }
            for item in list.items { items.append((key, list.appID, item)) }
        }
        try Self.inPieces(items) { piece in
            try connection.prepare(Self.listItems[Self.shape(piece.count)]).run { parameters in
                for item in piece {
                    parameters.append(.integer(item.key.deviceID))
                    parameters.append(.text(item.key.name))
                    parameters.append(.text(item.item))
                    parameters.append(.integer(item.appID))
                }
            }
        }
    }

    /// Calls `body` with consecutive pieces of `items`, each of a power of two items at most `deferredRows`.
    static func inPieces<T>(_ items: [T], _ body: (ArraySlice<T>) throws -> Void) throws {
        var start = 0
        while start < items.count {
            var size = deferredRows
            while size > items.count - start { size /= 2 }
            try body(items[start..<start + size])
            start += size
        }
    }

    /// The index in the statement lists of a piece of `count` rows (a power of two).
    static func shape(_ count: Int) -> Int { count.trailingZeroBitCount }

    /// One statement's VALUES: `rows` copies of `template`, whose `parameters` parameters are
    /// spelled `$1`…, numbered on from row to row (`?1`… in the first, then `?(parameters + 1)`…).
    static func valueGroups(rows: Int, parameters: Int, _ template: String) -> String {
        (0..<rows).map { row in
            var group = template
            for parameter in (1...parameters).reversed() { group = group.replacingOccurrences(of: "$\(parameter)", with: "?\(row * parameters + parameter)") }
            return group
        }.joined(separator: ", ")
    }

    /// Inserts `rows` registered devices, or updates what changed in each (`registration`, whose
    /// parameters it takes row after row; its new values named `excluded`).
    static func registrationUpsert(rows: Int) -> String {
        func given(_ attribute: DeviceColumns.Attribute) -> String { "excluded.\(attribute.name)" }
        return """
            INSERT INTO devices (\(DeviceColumns.registered))
            VALUES \(valueGroups(rows: rows, parameters: 16, "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14, $15, $16)"))
            ON CONFLICT (app_id, hwid) DO UPDATE SET platform = excluded.platform,
              \(DeviceColumns.kept(DeviceColumns.optionalAttributes, given: given, stored: \.name)),
              updated_at = excluded.updated_at, push_token = excluded.push_token, gateway = COALESCE(excluded.gateway, gateway),
              web_p256dh = excluded.web_p256dh, web_auth = excluded.web_auth, subscribed = 1, token_invalid_reason = NULL
            WHERE excluded.platform IS NOT platform
              OR \(DeviceColumns.changed(DeviceColumns.optionalAttributes, given: given, stored: \.name, differs: "IS NOT"))
              OR excluded.push_token IS NOT push_token OR COALESCE(excluded.gateway, gateway) IS NOT gateway
              OR excluded.web_p256dh IS NOT web_p256dh OR excluded.web_auth IS NOT web_auth
              OR subscribed <> 1 OR token_invalid_reason IS NOT NULL
            """
    }

    /// For each shape: `registrationUpsert`.
    private static let registrations: [String] = (0...deferredRows.trailingZeroBitCount).map { shape in
        registrationUpsert(rows: 1 << shape)
    }

    /// For each shape: the users of registrations that name one (`upsertUser`).
    private static let users: [String] = (0...deferredRows.trailingZeroBitCount).map { shape in
        """
        INSERT INTO users (app_id, user_id, created_at, updated_at) VALUES \(valueGroups(rows: 1 << shape, parameters: 3, "($1, $2, $3, $3)"))
        ON CONFLICT DO NOTHING
        """
    }

    /// For each shape: a list's items (`applyTags`).
    private static let listItems: [String] = (0...deferredRows.trailingZeroBitCount).map { shape in
        """
        INSERT OR IGNORE INTO device_tag_items (device_id, name, item, app_id)
        VALUES \(valueGroups(rows: 1 << shape, parameters: 4, "($1, $2, $3, $4)"))
        """
    }

    /// For each shape: tags set (`applyTags`), a row rewritten only when its value changes.
    private static let tagsSet: [String] = (0...deferredRows.trailingZeroBitCount).map { shape in
        """
        INSERT INTO device_tags (device_id, name, app_id, type, num, str) VALUES \(valueGroups(rows: 1 << shape, parameters: 6, "($1, $2, $3, $4, $5, $6)"))
        ON CONFLICT DO UPDATE SET type = excluded.type, num = excluded.num, str = excluded.str
        WHERE type IS NOT excluded.type OR num IS NOT excluded.num OR str IS NOT excluded.str
        """
    }
}
