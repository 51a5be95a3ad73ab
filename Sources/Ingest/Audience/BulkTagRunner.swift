import Core
import Foundation
import Synchronization

/// Applies stored bulkSetTags jobs in the background, oldest first, a chunk of `chunkSize` entries
/// per transaction. It runs in the dispatching ingest only (`isDispatching`), so that on one
/// database a single process applies jobs, and a job whose ingest died is finished by the next
/// dispatcher from the progress stored with its last chunk. Each chunk is an ordinary store write:
/// it queues behind the request writes already waiting and lets the next ones in after it, so a
/// large job shares the database writer with device traffic instead of holding it.
final class BulkTagRunner: Sendable {
    /// Entries per transaction: small enough that a request queued behind a chunk waits little.
    static let chunkSize = 200

    private let store: any BulkTagStore
    private let clock: any Clock
    private let logger: Logger
    private let isDispatching: @Sendable () -> Bool
    private let stopping = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(store: any BulkTagStore, clock: any Clock, logger: Logger, isDispatching: @escaping @Sendable () -> Bool) {
        self.store = store
        self.clock = clock
        self.logger = logger
        self.isDispatching = isDispatching
    }

    func start() {
        let thread = Thread(named: "bulk-tags") { [self] in
            run()
            finished.signal()
        }
        thread.start()
    }

    /// Looks for jobs now (after one was stored).
    func nudge() { wake.signal() }

    /// Stops after the chunk being applied; the job goes on from there at the next start.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
        finished.wait()
    }

    private func run() {
        var failures = FailureSpell(subject: "bulkSetTags runner")
        while !stopping.load(ordering: .relaxed) {
            var worked = false
            if isDispatching() {
                do {
                    for (job, devices) in try store.unfinishedBulkTagJobs() where !stopping.load(ordering: .relaxed) {
                        if try apply(job, devices: devices) { worked = true }
                    }
                    failures.succeeded(logger: logger)
                } catch {
                    failures.failed(error, logger: logger)
                }
            }
            if !worked { _ = wake.wait(timeout: .now() + 1) }
        }
    }

    /// Applies the job's remaining entries; false when another process had moved its progress on
    /// first (then this runner waits before it looks again).
    private func apply(_ job: BulkTagJob, devices: String) throws -> Bool {
        let entries: [BulkTagEntry]
        do {
            guard case .array(let items) = try JSON.parse(devices) else { throw ArgumentError("devices is not an array") }
            entries = try BulkSetTagsRequest.entries(items)
        } catch {
            // Validated before it was stored, so only a damaged row gets here.
            logger.error("bulkSetTags job unreadable", ["job.id": job.id, "error": "\(error)"])
            try store.failBulkTagJob(id: job.id, reason: "the stored request could not be read: \(error)", now: clock.now())
            return true
        }
        logger.info("bulkSetTags job running", ["job.id": job.id, "job.from": String(job.processed), "job.devices": String(entries.count)])
        var from = job.processed
        while from < entries.count, !stopping.load(ordering: .relaxed) {
            let chunk = Array(entries[from..<min(from + Self.chunkSize, entries.count)])
            guard try store.applyBulkTags(job: job, from: from, entries: chunk, now: clock.now()) else { return from > job.processed }
            from += chunk.count
        }
        if from >= entries.count { logger.info("bulkSetTags job completed", ["job.id": job.id]) }
        return true
    }
}
