import Core

/// One pass of retention over the rows that grow without bound: processed reports and the delivery
/// rows of finished messages past their retention (once their inbox is over), the inbox statuses
/// of messages whose inbox is over, transaction ids past their window, and old finished
/// bulkSetTags jobs. Each kind loses at most `batch` rows a pass, so that request writes never wait
/// long behind one; the dispatching ingest runs passes on a timer.
struct RetentionPass: Sendable {
    /// Rows deleted per kind and pass when none is given.
    static let defaultBatch = 2_000

    let settings: RetentionSettings
    let campaigns: any RetentionStore
    let bulkTags: any BulkTagStore
    let analytics: any AnalyticsStore
    let logger: Logger
    var batch = Self.defaultBatch

    /// Deletes a batch of each kind whose retention ran out at `now`; true when some kind lost a
    /// full batch (more of it may be waiting, so the next pass should come soon).
    func run(now: Int64) throws -> Bool {
        let reports = try analytics.pruneReports(receivedBefore: now - settings.reportsSeconds, limit: batch)
        let deliveries = try campaigns.pruneDeliveries(finishedBefore: now - settings.deliveriesSeconds, limit: batch, now: now)
        let inbox = try campaigns.pruneInbox(expiredAt: now, limit: batch)
        let transactionIDs = try campaigns.pruneMessageTransactions(expiredAt: now, limit: batch)
        let bulkJobs = try bulkTags.pruneBulkTagJobs(finishedBefore: now - settings.bulkJobsSeconds, limit: batch)
        let deleted = [reports, deliveries, inbox, transactionIDs, bulkJobs]
        if deleted.contains(where: { $0 > 0 }) {
            logger.debug("retention pass", ["reports.deleted": String(reports), "deliveries.deleted": String(deliveries),
                                            "inbox.deleted": String(inbox), "transaction_ids.deleted": String(transactionIDs),
                                            "bulk_jobs.deleted": String(bulkJobs)])
        }
        return deleted.contains(batch)
    }
}
