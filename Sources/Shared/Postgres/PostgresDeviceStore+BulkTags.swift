import Core

/// bulkSetTags jobs on PostgreSQL: stored with their entries, applied a chunk per transaction.
extension PostgresDeviceStore {
    static let bulkJobColumns = "j.id, a.code, j.status, j.create_missing, j.total, j.processed, j.failed, j.failure, j.created_at, j.updated_at"

    static func bulkJob(_ row: PostgresRow) -> BulkTagJob {
        BulkTagJob(id: row.text(0), app: row.text(1), status: BulkTagJob.Status(rawValue: row.text(2)) ?? .failed,
                   createMissingTags: row.bool(3), total: Int(row.int(4)), processed: Int(row.int(5)), failed: Int(row.int(6)),
                   failure: row.optionalText(7), createdAt: row.int(8), updatedAt: row.int(9))
    }

    public func createBulkTagJob(id: String, app: String, createMissingTags: Bool, devices: String, total: Int, now: Int64) throws(StoreError) {
        let appID = try database.appID(app)
        try database.write { transaction in
            try transaction.connection.run(
                """
                INSERT INTO bulk_tag_jobs (id, app_id, status, create_missing, devices, total, created_at, updated_at)
                VALUES ($1, $2, 'Pending', $3, $4, $5, $6, $6)
                """, [.text(id), .integer(appID), .boolean(createMissingTags), .text(devices), .integer(Int64(total)), .integer(now)])
        }
    }

    public func bulkTagJob(id: String, errorLimit: Int) throws(StoreError) -> (BulkTagJob, [BulkTagError])? {
        try database.read { connection in
            guard let job = try connection.first(
                "SELECT \(Self.bulkJobColumns) FROM bulk_tag_jobs j JOIN applications a ON a.id = j.app_id WHERE j.id = $1",
                [.text(id)], Self.bulkJob) else { return nil }
            // Errors are written with the progress that counts them: read after the job, none is missing.
            let errors = try connection.rows(
                "SELECT position, field, value, message FROM bulk_tag_errors WHERE job_id = $1 ORDER BY position LIMIT $2",
                [.text(id), .integer(Int64(errorLimit))]) { row in
                    BulkTagError(index: Int(row.int(0)), field: row.text(1), value: row.text(2), message: row.text(3))
                }
            return (job, errors)
        }
    }

    public func unfinishedBulkTagJobs() throws(StoreError) -> [(job: BulkTagJob, devices: String)] {
        try database.read { connection in
            try connection.rows(
                """
                SELECT \(Self.bulkJobColumns), j.devices FROM bulk_tag_jobs j JOIN applications a ON a.id = j.app_id
                WHERE j.status IN ('Pending', 'Processing') ORDER BY j.created_at, j.id
                """) { row in (job: Self.bulkJob(row), devices: row.text(10)) }
        }
    }

    public func applyBulkTags(job: BulkTagJob, from: Int, entries: [BulkTagEntry], now: Int64) throws(StoreError) -> Bool {
        let appID = try database.appID(job.app)
        return try database.write { transaction in
            let connection = transaction.connection
            // Locks the job's row: a second process applying the same chunk waits, then finds the
            // progress moved and stops.
            let processed = try connection.first(
                "SELECT processed FROM bulk_tag_jobs WHERE id = $1 AND status IN ('Pending', 'Processing') FOR UPDATE",
                [.text(job.id)]) { Int($0.int(0)) }
            guard processed == from else { return false }
            var errors: [(position: Int, entry: BulkTagEntry, message: String)] = []
            // Entries that only set tags of known types on a device named by hwid go many per
            // statement; the others, and a device's second entry, are applied alone, in order.
            var quick: [QuickEntry] = []
            var quickDevices: Set<String> = []
            func flush() throws {
                guard !quick.isEmpty else { return }
                errors += try applyQuickly(transaction, appID: appID, quick, createMissingTags: job.createMissingTags, now: now)
                quick.removeAll()
                quickDevices.removeAll()
            }
            for (offset, entry) in entries.enumerated() {
                if case .hwid(let hwid) = entry.device, !quickDevices.contains(hwid),
                    let tags = (try? batchable(entry.updates, appID: appID)) ?? nil, !tags.isRelative, tags.badge == nil,
                    !tags.values.contains(where: { $0.value.type == .list }) {
                    quick.append(QuickEntry(position: from + offset, entry: entry, hwid: hwid, tags: tags.values))
                    quickDevices.insert(hwid)
                    continue
                }
                try flush()
                if let message = try applyAlone(transaction, appID: appID, entry: entry, createMissingTags: job.createMissingTags, now: now) {
                    errors.append((from + offset, entry, message))
                }
            }
            try flush()
            if !errors.isEmpty {
                try connection.run(
                    """
                    INSERT INTO bulk_tag_errors (job_id, position, field, value, message)
                    SELECT $1, u.position, u.field, u.value, u.message FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[])
                      AS u(position, field, value, message)
                    """,
                    [.text(job.id), .integers(errors.map { Int64($0.position) }), .texts(errors.map(\.entry.device.field.name)),
                     .texts(errors.map(\.entry.device.field.value)), .texts(errors.map(\.message))])
            }
            let failed = errors.count
            // The entries are dropped once every one of them is applied.
            try connection.run(
                """
                UPDATE bulk_tag_jobs SET processed = $2, failed = failed + $3, updated_at = $4,
                    status = CASE WHEN $2 >= total THEN 'Completed' ELSE 'Processing' END,
                    devices = CASE WHEN $2 >= total THEN '' ELSE devices END
                WHERE id = $1
                """, [.text(job.id), .integer(Int64(from + entries.count)), .integer(Int64(failed)), .integer(now)])
            return true
        }
    }

    public func failBulkTagJob(id: String, reason: String, now: Int64) throws(StoreError) {
        try database.write { transaction in
            try transaction.connection.run("UPDATE bulk_tag_jobs SET status = 'Failed', failure = $2, devices = '', updated_at = $3 WHERE id = $1",
                                           [.text(id), .text(reason), .integer(now)])
        }
    }

    public func pruneBulkTagJobs(finishedBefore before: Int64, limit: Int) throws(StoreError) -> Int {
        try database.write { transaction in
            let values: [PostgresValue] = [.integer(before), .integer(Int64(limit))]
            try transaction.connection.run("DELETE FROM bulk_tag_errors WHERE job_id IN (\(Self.finishedBulkJobs))", values)
            return try transaction.connection.run("DELETE FROM bulk_tag_jobs WHERE id IN (\(Self.finishedBulkJobs))", values)
        }
    }

    /// The oldest finished jobs last updated before $1, at most $2 of them.
    static let finishedBulkJobs = """
        SELECT id FROM bulk_tag_jobs WHERE status IN ('Completed', 'Failed') AND updated_at < $1 ORDER BY updated_at, id LIMIT $2
        """

    /// An entry that only sets tags of known types on a device named by hwid, with its tags converted.
    struct QuickEntry {
        let position: Int
        let entry: BulkTagEntry
        let hwid: String
        let tags: [(name: String, value: TagValue)]
    }

    /// One entry in a savepoint of its own: why it changed nothing, or nil when it was applied.
    private func applyAlone(_ transaction: PostgresTransaction, appID: Int64, entry: BulkTagEntry, createMissingTags: Bool,
                            now: Int64) throws -> String? {
        let connection = transaction.connection
        let defined = transaction.definedTags
        try connection.execute("SAVEPOINT entry")
        do {
            try applyBulkEntry(transaction, appID: appID, entry: entry, createMissingTags: createMissingTags, now: now)
            try connection.execute("RELEASE SAVEPOINT entry")
            return nil
        } catch {
            transaction.definedTags = defined
            try connection.execute("ROLLBACK TO SAVEPOINT entry")
            try connection.execute("RELEASE SAVEPOINT entry")
            guard let message = BulkTagError.message(of: error) else { throw error }
            return message
        }
    }

    /// Entries that set tags of known types on devices named by hwid (each device once), in one
    /// statement: the devices found, their `updated_at` and tags written. Returns the entries whose
    /// device does not exist. When the database refuses the statement, each entry is applied alone.
    private func applyQuickly(_ transaction: PostgresTransaction, appID: Int64, _ quick: [QuickEntry], createMissingTags: Bool,
                              now: Int64) throws -> [(position: Int, entry: BulkTagEntry, message: String)] {
        let connection = transaction.connection
        try connection.execute("SAVEPOINT entries")
        do {
            let missing = try connection.rows(
                """
                WITH input AS (SELECT * FROM unnest($2::text[]) WITH ORDINALITY AS u(hwid, n)),
                found AS (SELECT i.n, d.id FROM input i JOIN devices d ON d.app_id = $1 AND d.hwid = i.hwid),
                touched AS (UPDATE devices d SET updated_at = $3 FROM found f WHERE d.id = f.id),
                tagged AS (
                  INSERT INTO device_tags (device_id, name, app_id, type, num, str)
                  SELECT f.id, t.name, $1, t.type, t.num, t.str
                  FROM unnest($4::bigint[], $5::text[], $6::integer[], $7::numeric[], $8::text[]) AS t(n, name, type, num, str)
                  JOIN found f ON f.n = t.n
                  ON CONFLICT (device_id, name) DO UPDATE SET type = excluded.type, num = excluded.num, str = excluded.str
                  WHERE device_tags.type IS DISTINCT FROM excluded.type OR device_tags.num IS DISTINCT FROM excluded.num
                    OR device_tags.str IS DISTINCT FROM excluded.str)
                SELECT n FROM input i WHERE NOT EXISTS (SELECT 1 FROM found f WHERE f.n = i.n) ORDER BY n
                """,
                [.integer(appID), .texts(quick.map(\.hwid)), .integer(now)] + TagValue.columns(quick.map(\.tags))) { Int($0.int(0)) }
            try connection.execute("RELEASE SAVEPOINT entries")
            return missing.map { (quick[$0 - 1].position, quick[$0 - 1].entry, "device not found") }
        } catch {
            try connection.execute("ROLLBACK TO SAVEPOINT entries")
            try connection.execute("RELEASE SAVEPOINT entries")
            guard BulkTagError.message(of: PostgresDatabase.storeError(error)) != nil else { throw error }
            return try quick.compactMap { entry in
                try applyAlone(transaction, appID: appID, entry: entry.entry, createMissingTags: createMissingTags, now: now).map {
                    (entry.position, entry.entry, $0)
                }
            }
        }
    }

    /// One entry: its devices found, then the updates applied to each.
    func applyBulkEntry(_ transaction: PostgresTransaction, appID: Int64, entry: BulkTagEntry, createMissingTags: Bool, now: Int64) throws {
        let connection = transaction.connection
        let devices: [Int64]
        switch entry.device {
        case .hwid(let hwid):
            devices = try connection.rows("SELECT id FROM devices WHERE app_id = $1 AND hwid = $2", [.integer(appID), .text(hwid)]) { $0.int(0) }
            guard !devices.isEmpty else { throw StoreError.invalid("device not found") }
        case .userID(let user):
            devices = try connection.rows("SELECT id FROM devices WHERE app_id = $1 AND user_id = $2 ORDER BY id",
                                          [.integer(appID), .text(user)]) { $0.int(0) }
            guard !devices.isEmpty else { throw StoreError.invalid("the user has no device") }
        case .pushToken(let token):
            devices = try connection.rows("SELECT id FROM devices WHERE app_id = $1 AND left(push_token, 16) = left($2, 16) AND push_token = $2",
                                          [.integer(appID), .text(token)]) { $0.int(0) }
            guard !devices.isEmpty else { throw StoreError.invalid("no device has this push token") }
        }
        if !createMissingTags {
            for update in entry.updates where try database.tagType(transaction, appID: appID, name: update.name) == nil {
                throw StoreError.invalid("tag \(update.name) is not defined (create_missing_tags is false)")
            }
        }
        for id in devices {
            try applyTags(transaction, appID: appID, deviceID: id, updates: entry.updates)
            try connection.run("UPDATE devices SET updated_at = $1 WHERE id = $2", [.integer(now), .integer(id)])
        }
    }
}
