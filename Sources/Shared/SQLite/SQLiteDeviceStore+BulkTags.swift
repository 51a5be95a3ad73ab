import Core

/// bulkSetTags jobs on SQLite: stored with their entries, applied a chunk per transaction.
extension SQLiteDeviceStore {
    static let bulkJobColumns = "j.id, a.code, j.status, j.create_missing, j.total, j.processed, j.failed, j.failure, j.created_at, j.updated_at"

    static func bulkJob(_ row: SQLiteStatement) -> BulkTagJob {
        BulkTagJob(id: row.text(0), app: row.text(1), status: BulkTagJob.Status(rawValue: row.text(2)) ?? .failed,
                   createMissingTags: row.int(3) != 0, total: Int(row.int(4)), processed: Int(row.int(5)), failed: Int(row.int(6)),
                   failure: row.optionalText(7), createdAt: row.int(8), updatedAt: row.int(9))
    }

    public func createBulkTagJob(id: String, app: String, createMissingTags: Bool, devices: String, total: Int, now: Int64) throws(StoreError) {
        let appID = try appID(app)
        try write { writer in
            try writer.connection.prepare(
                """
                INSERT INTO bulk_tag_jobs (id, app_id, status, create_missing, devices, total, created_at, updated_at)
                VALUES (?1, ?2, 'Pending', ?3, ?4, ?5, ?6, ?6)
                """
            ).run([.text(id), .integer(appID), .integer(createMissingTags ? 1 : 0), .text(devices), .integer(Int64(total)), .integer(now)])
        }
    }

    public func bulkTagJob(id: String, errorLimit: Int) throws(StoreError) -> (BulkTagJob, [BulkTagError])? {
        try read { connection in
            guard let job = try connection.prepare(
                "SELECT \(Self.bulkJobColumns) FROM bulk_tag_jobs j JOIN applications a ON a.id = j.app_id WHERE j.id = ?"
            ).first([.text(id)], Self.bulkJob) else { return nil }
            // Errors are written with the progress that counts them: read after the job, none is missing.
            let errors = try connection.prepare(
                "SELECT position, field, value, message FROM bulk_tag_errors WHERE job_id = ? ORDER BY position LIMIT ?"
            ).rows([.text(id), .integer(Int64(errorLimit))]) { row in
                BulkTagError(index: Int(row.int(0)), field: row.text(1), value: row.text(2), message: row.text(3))
            }
            return (job, errors)
        }
    }

    public func unfinishedBulkTagJobs() throws(StoreError) -> [(job: BulkTagJob, devices: String)] {
        try read { connection in
            try connection.prepare(
                """
                SELECT \(Self.bulkJobColumns), j.devices FROM bulk_tag_jobs j JOIN applications a ON a.id = j.app_id
                WHERE j.status IN ('Pending', 'Processing') ORDER BY j.created_at, j.id
                """
            ).rows([]) { row in (job: Self.bulkJob(row), devices: row.text(10)) }
        }
    }

    public func applyBulkTags(job: BulkTagJob, from: Int, entries: [BulkTagEntry], now: Int64) throws(StoreError) -> Bool {
        let appID = try appID(job.app)
        return try write { writer in
            let connection = writer.connection
            let processed = try connection.prepare("SELECT processed FROM bulk_tag_jobs WHERE id = ? AND status IN ('Pending', 'Processing')")
                .first([.text(job.id)]) { Int($0.int(0)) }
            guard processed == from else { return false }
            var failed = 0
            for (offset, entry) in entries.enumerated() {
                try connection.statement("SAVEPOINT entry")
                do {
                    try applyBulkEntry(writer, appID: appID, entry: entry, createMissingTags: job.createMissingTags, now: now)
                    try connection.statement("RELEASE entry")
                } catch {
                    // The entry's tag types may have been cached inside the savepoint.
                    writer.tagTypes.removeAll()
                    try connection.statement("ROLLBACK TO entry")
                    try connection.statement("RELEASE entry")
                    guard let message = BulkTagError.message(of: error) else { throw error }
                    failed += 1
                    let (field, value) = entry.device.field
                    try connection.prepare("INSERT INTO bulk_tag_errors (job_id, position, field, value, message) VALUES (?, ?, ?, ?, ?)")
                        .run([.text(job.id), .integer(Int64(from + offset)), .text(field), .text(value), .text(message)])
                }
            }
            // The entries are dropped once every one of them is applied.
            try connection.prepare(
                """
                UPDATE bulk_tag_jobs SET processed = ?2, failed = failed + ?3, updated_at = ?4,
                    status = CASE WHEN ?2 >= total THEN 'Completed' ELSE 'Processing' END,
                    devices = CASE WHEN ?2 >= total THEN '' ELSE devices END
                WHERE id = ?1
                """
            ).run([.text(job.id), .integer(Int64(from + entries.count)), .integer(Int64(failed)), .integer(now)])
            return true
        }
    }

    public func failBulkTagJob(id: String, reason: String, now: Int64) throws(StoreError) {
        try write { writer in
            try writer.connection.prepare("UPDATE bulk_tag_jobs SET status = 'Failed', failure = ?2, devices = '', updated_at = ?3 WHERE id = ?1")
                .run([.text(id), .text(reason), .integer(now)])
        }
    }

    public func pruneBulkTagJobs(finishedBefore before: Int64, limit: Int) throws(StoreError) -> Int {
        try write { writer in
            let connection = writer.connection
            let values: [SQLiteValue] = [.integer(before), .integer(Int64(limit))]
            try connection.prepare("DELETE FROM bulk_tag_errors WHERE job_id IN (\(Self.finishedBulkJobs))").run(values)
            try connection.prepare("DELETE FROM bulk_tag_jobs WHERE id IN (\(Self.finishedBulkJobs))").run(values)
            return connection.changes
        }
    }

    /// The oldest finished jobs last updated before ?1, at most ?2 of them.
    static let finishedBulkJobs = """
        SELECT id FROM bulk_tag_jobs WHERE status IN ('Completed', 'Failed') AND updated_at < ?1 ORDER BY updated_at, id LIMIT ?2
        """

    /// One entry: its devices found, then the updates applied to each.
    func applyBulkEntry(_ writer: SQLiteDatabase.Writer, appID: Int64, entry: BulkTagEntry, createMissingTags: Bool, now: Int64) throws {
        let connection = writer.connection
        let devices: [Int64]
        switch entry.device {
        case .hwid(let hwid):
            devices = try connection.prepare("SELECT id FROM devices WHERE app_id = ? AND hwid = ?").rows([.integer(appID), .text(hwid)]) { $0.int(0) }
            guard !devices.isEmpty else { throw StoreError.invalid("device not found") }
        case .userID(let user):
            devices = try connection.prepare("SELECT id FROM devices WHERE app_id = ? AND user_id = ? ORDER BY id")
                .rows([.integer(appID), .text(user)]) { $0.int(0) }
            guard !devices.isEmpty else { throw StoreError.invalid("the user has no device") }
        case .pushToken(let token):
            devices = try connection.prepare(
                "SELECT id FROM devices WHERE app_id = ?1 AND substr(push_token, 1, 16) = substr(?2, 1, 16) AND push_token = ?2"
            ).rows([.integer(appID), .text(token)]) { $0.int(0) }
            guard !devices.isEmpty else { throw StoreError.invalid("no device has this push token") }
        }
        if !createMissingTags {
            for update in entry.updates where try tagType(writer, appID: appID, name: update.name) == nil {
                throw StoreError.invalid("tag \(update.name) is not defined (create_missing_tags is false)")
            }
        }
        for id in devices {
            try applyTags(writer, appID: appID, deviceID: id, updates: entry.updates)
            try connection.prepare("UPDATE devices SET updated_at = ? WHERE id = ?").run([.integer(now), .integer(id)])
        }
    }
}
