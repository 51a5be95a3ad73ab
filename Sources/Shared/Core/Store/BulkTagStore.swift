/// bulkSetTags jobs: stored when requested, applied in steps that each commit their progress, so
/// that a job survives a restart and no step is applied twice.
public protocol BulkTagStore: Sendable {
    /// bulkSetTags: stores a job over `devices` (the request's entries as JSON text, kept until the job
    /// completes) in status Pending.
    func createBulkTagJob(id: String, app: String, createMissingTags: Bool, devices: String, total: Int, now: Int64) throws(StoreError)

    /// A job and up to `errorLimit` of its entry errors (by position), or nil.
    func bulkTagJob(id: String, errorLimit: Int) throws(StoreError) -> (BulkTagJob, [BulkTagError])?

    /// Jobs not completed or failed, oldest first, with their stored entries.
    func unfinishedBulkTagJobs() throws(StoreError) -> [(job: BulkTagJob, devices: String)]

    /// Applies `entries` (positions `from` …) in one transaction that also advances the job's progress;
    /// an entry that cannot be applied changes nothing and is recorded as an error. Returns false,
    /// changing nothing, when the job's progress is no longer `from` (another process applied them).
    func applyBulkTags(job: BulkTagJob, from: Int, entries: [BulkTagEntry], now: Int64) throws(StoreError) -> Bool

    /// Marks a job Failed (its stored entries cannot be read back).
    func failBulkTagJob(id: String, reason: String, now: Int64) throws(StoreError)

    /// Retention: deletes up to `limit` finished (completed or failed) bulkSetTags jobs last updated
    /// before `before`, with their error rows; returns how many jobs went.
    func pruneBulkTagJobs(finishedBefore before: Int64, limit: Int) throws(StoreError) -> Int
}
