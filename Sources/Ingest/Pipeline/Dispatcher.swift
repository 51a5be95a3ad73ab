import Foundation
import Synchronization
import Core
import Queue

/// Hands campaign shards and report batches to workers. Several ingests may serve one database:
/// each binds its own endpoints and hears every worker's heartbeats, but only the one holding the
/// dispatcher role (`DispatcherElection`, renewed every second) dispatches; the others stand by and
/// take over when it stops renewing. It binds the queue endpoints, learns which workers are alive
/// and how many shards each can hold from their heartbeats, sends each ready shard to a worker with
/// room (`ShardDispatch`), and sends each worker ranges of stored reports to fold into the
/// statistics (`ReportBatches`). On a timer it starts due messages, returns the leases of expired or
/// vanished workers, marks finished messages done (`ShardDispatch.housekeeping`) and runs retention
/// (`RetentionPass`). All socket work happens on one thread, as ZeroMQ requires.
final class Dispatcher: Sendable {
    struct Worker: Sendable {
        let id: String
        /// The stable name it gives (`--name`; nil from a worker that does not say).
        let name: String?
        /// The host the worker says it runs on (nil from a worker that does not say).
        let host: String?
        /// Where its heartbeats come from, as ZeroMQ tells (`QueueSocket.Message.peerAddress`).
        let address: String?
        let pid: Int64
        let capacity: Int64
        let jobsInFlight: Int64
        let lastSeen: Double
        /// The worker's delivery counters and process figures.
        let stats: WorkerStatistics
    }

    let election: DispatcherElection
    private let settings: QueueSettings
    private let shards: ShardDispatch
    private let retention: RetentionPass
    private let analytics: any AnalyticsStore
    private let clock: any Clock
    private let logger: Logger
    private let workers = Lock<[String: Worker]>([:])
    private let reports = Lock(ReportBatches())
    /// Reports stored but not yet processed, as of the last look (by id span: an upper bound).
    private let pendingReports = Atomic<Int64>(0)
    /// What this ingest's housekeeping changed since it started, summed.
    private let housekept = Lock(ShardDispatch.Housekeeping(started: 0, released: 0, done: 0))
    private let stopping = Atomic<Bool>(false)
    private let wake = Atomic<Bool>(false)
    private let wakeup = Wakeup()
    private let finished = DispatchSemaphore(value: 0)

    /// `id` is this ingest's name in the dispatcher role (`ProcessIdentity.id`).
    init(id: String, settings: QueueSettings, retention: RetentionSettings, campaigns: any CampaignStore, bulkTags: any BulkTagStore,
         analytics: any AnalyticsStore, clock: any Clock, logger: Logger) {
        election = DispatcherElection(id: id, store: campaigns, clock: clock, logger: logger)
        self.settings = settings
        shards = ShardDispatch(store: campaigns)
        self.retention = RetentionPass(settings: retention, campaigns: campaigns, bulkTags: bulkTags, analytics: analytics, logger: logger)
        self.analytics = analytics
        self.clock = clock
        self.logger = logger
    }

    /// Binds both endpoints on the dispatcher's thread; throws if either cannot be bound.
    func start(context: QueueContext) throws {
        // `/metrics` tells the backlog from the first scrape on.
        pendingReports.store(try analytics.reportBacklog().pending, ordering: .relaxed)
        let started = DispatchSemaphore(value: 0)
        let failure = Lock<(any Error)?>(nil)
        let thread = Thread(named: "dispatcher") { [self] in
            let jobs: QueueSocket
            let results: QueueSocket
            do {
                jobs = try QueueSocket(context, kind: .router)
                results = try QueueSocket(context, kind: .pull)
                for socket in [jobs, results] {
                    try socket.setMaxMessageSize(QueueMessage.maxFrameBytes)
                    // A worker that stops answering (a partition) has its connections closed within seconds.
                    try socket.setHeartbeat(intervalMilliseconds: Pipeline.queueHeartbeatMilliseconds,
                                            timeoutMilliseconds: Pipeline.queueSilenceMilliseconds)
                    if let curve = settings.curve { try socket.makeCurveServer(secretKey: curve.secretKey) }
                }
                try jobs.bind(settings.jobs[0])
                try results.bind(settings.results[0])
            } catch {
                failure.withLock { $0 = error }
                started.signal()
                finished.signal()
                return
            }
            started.signal()
            run(jobs: jobs, results: results)
            jobs.close()
            results.close()
            finished.signal()
        }
        thread.start()
        started.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        logger.info("queue bound", ["queue.jobs": settings.jobs[0], "queue.results": settings.results[0]])
    }

    /// Asks the dispatcher to look for due work and finished messages now (after a message was
    /// created, or a shard acknowledged).
    func nudge() {
        wake.store(true, ordering: .relaxed)
        wakeup.signal()
    }

    /// Whether this ingest dispatches now (`DispatcherElection.isDispatching`).
    var isDispatching: Bool { election.isDispatching }

    /// The id of the ingest that dispatches, as of the last look (at most a second old); nil while
    /// no ingest holds the role, or nobody can tell.
    var dispatchingIngest: String? { election.dispatchingIngest }

    private func run(jobs: QueueSocket, results: QueueSocket) {
        var lastHousekeeping = 0.0
        var lastHold = 0.0
        var nextPrune = 0.0
        // While the database is down every step fails: one line when that starts, one when it ends.
        var failures = FailureSpell(subject: "dispatcher")
        while !stopping.load(ordering: .relaxed) {
            do {
                // A nudge ends the wait at once: a message created now starts without waiting out the poll.
                if try QueueSocket.firstReadable([results], timeoutMilliseconds: 50, wakeup: wakeup) != nil {
                    // Everything that arrived is handled before dispatching.
                    while let message = try results.receiveMessage(timeoutMilliseconds: 0) { handle(message) }
                }
                // Workers send nothing on the jobs socket; reading it lets libzmq finish closing the
                // connections of workers that went away, so that their routing ids are free again.
                while try jobs.receiveMessage(timeoutMilliseconds: 0) != nil {}
                let now = monotonicSeconds()
                // A step that asked the store nothing (standing by between two holds) tells nothing.
                let holding = now - lastHold >= 1
                if holding {
                    lastHold = now
                    try election.renew()
                }
                if isDispatching {
                    if now - lastHousekeeping >= 0.25 || wake.exchange(false, ordering: .relaxed) {
                        lastHousekeeping = now
                        try housekeeping()
                    }
                    if now >= nextPrune {
                        // Again in a second while there is a backlog of old rows, else in a minute.
                        nextPrune = now + (try retention.run(now: clock.now()) ? 1 : 60)
                    }
                    // Workers that take work (a stopping worker advertises capacity 0).
                    let live = liveWorkers().filter { $0.capacity > 0 }
                    try dispatch(jobs: jobs, to: live)
                    try dispatchReports(jobs: jobs, to: live.map(\.id))
                }
                if holding || isDispatching { failures.succeeded(logger: logger) }
            } catch {
                failures.failed(error, logger: logger)
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        election.resign()
    }

    /// Malformed messages and acknowledgements of batches a worker does not hold (forged, or stale
    /// after a takeover): one line a minute each, however many arrive.
    private let malformed = Lock(OccasionalLine())
    private let strayAcknowledgements = Lock(OccasionalLine())

    private func handle(_ received: QueueSocket.Message) {
        let frames = received.frames
        guard let frame = frames.last, let message = QueueMessage.decode(frame) else {
            if let count = malformed.withLock({ $0.note(now: monotonicSeconds()) }) {
                logger.warning("malformed queue message ignored (logged once a minute)",
                               ["messages": String(count), "bytes": String(frames.last?.count ?? 0)])
            }
            return
        }
        switch message {
        case .heartbeat(let id, let name, let host, let pid, let capacity, let inFlight, let stats):
            let isNew = workers.withLock { registry in
                let isNew = registry[id] == nil
                registry[id] = Worker(id: id, name: name, host: host, address: received.peerAddress, pid: pid, capacity: capacity,
                                      jobsInFlight: inFlight, lastSeen: monotonicSeconds(), stats: stats)
                return isNew
            }
            if isNew {
                logger.info("worker joined", ["worker.id": id, "worker.name": name ?? "?", "worker.host": host ?? "?", "worker.address": received.peerAddress ?? "?",
                                              "worker.pid": String(pid)])
            }
        case .ack(let id, let shard):
            logger.verbose("shard acknowledged", ["worker.id": id, "shard.id": String(shard)])
            // A message whose last shard this was is marked done at once, not at the next round.
            nudge()
        case .reportsDone(let id, let after, let processed, let setAside):
            // Workers tell every ingest; only the dispatching one handed the batch out.
            guard isDispatching else { return }
            guard reports.withLock({ $0.acknowledged(worker: id, after: after, processed: processed, setAside: setAside) }) else {
                if let count = strayAcknowledgements.withLock({ $0.note(now: monotonicSeconds()) }) {
                    logger.warning("report batch acknowledgement ignored: not a batch this worker holds (logged once a minute)",
                                   ["messages": String(count), "worker.id": id, "reports.after": String(after)])
                }
                return
            }
            logger.verbose("reports processed", ["worker.id": id, "reports.after": String(after), "reports.processed": String(processed)])
        case .job, .reports:
            logger.warning("unexpected job message on the results channel")
        }
    }

    /// Starts due messages, recovers leases, completes finished messages.
    private func housekeeping() throws {
        let done = try shards.housekeeping(now: clock.now(), liveWorkers: Set(liveWorkers().map(\.id)))
        housekept.withLock { $0.add(done) }
        if done.started > 0 { logger.info("messages started", ["count": String(done.started)]) }
        if done.released > 0 { logger.warning("leases returned to the pool", ["count": String(done.released)]) }
        if done.done > 0 { logger.info("messages done", ["count": String(done.done)]) }
    }

    /// Sends live workers the shards they have room for (`ShardDispatch.assign`).
    private func dispatch(jobs: QueueSocket, to live: [Worker]) throws {
        let rooms = live.map { ShardDispatch.Room(worker: $0.id, capacity: $0.capacity, jobsInFlight: $0.jobsInFlight) }
        _ = try shards.assign(to: rooms, now: clock.now()) { worker, shard in
            do {
                try jobs.send([Array(worker.utf8), QueueMessage.job(shard: shard).encoded], wait: false)
                logger.debug("shard dispatched", ["worker.id": worker, "shard.id": String(shard)])
            } catch {
                logger.warning("worker unreachable; shard returned", ["worker.id": worker, "error": "\(error)"])
                throw error
            }
        }
    }

    /// Sends each live worker report batches up to its share.
    private func dispatchReports(jobs: QueueSocket, to live: [String]) throws {
        let backlog = try analytics.reportBacklog()
        pendingReports.store(backlog.pending, ordering: .relaxed)
        let sends = reports.withLock { $0.assign(backlog: backlog, workers: live, now: monotonicSeconds()) }
        for batch in sends {
            do {
                try jobs.send([Array(batch.worker.utf8), QueueMessage.reports(after: batch.after, through: batch.through).encoded], wait: false)
            } catch {
                // It stays outstanding and goes to another worker after `ReportBatches.timeout`.
                logger.warning("worker unreachable; report batch will be handed out again", ["worker.id": batch.worker, "error": "\(error)"])
            }
        }
    }

    /// Report processing for `/metrics`: stored but not yet processed (upper bound), processed so
    /// far, and of those set aside uncounted.
    var reportProgress: (pending: Int64, processed: Int64, setAside: Int64) {
        let (processed, setAside) = reports.withLock { ($0.processed, $0.setAside) }
        return (pendingReports.load(ordering: .relaxed), processed, setAside)
    }

    /// For `/metrics`: messages this ingest started and marked done, and leases it returned to the
    /// pool, while it dispatched, since it started.
    var housekeepingTotals: ShardDispatch.Housekeeping { housekept.withLock { $0 } }

    /// Workers heard from recently. One silent for `Pipeline.workerSilenceSeconds` is forgotten and
    /// logged: at INFO when its last heartbeat said it was stopping (capacity 0), else as a WARNING,
    /// since it stopped answering (killed, or cut off by the network).
    func liveWorkers() -> [Worker] {
        let now = monotonicSeconds()
        let (live, gone) = workers.withLock { registry in
            let gone = registry.values.filter { now - $0.lastSeen >= Pipeline.workerSilenceSeconds }
            for worker in gone { registry[worker.id] = nil }
            return (Array(registry.values), gone)
        }
        for worker in gone {
            let fields: KeyValuePairs = ["worker.id": worker.id, "worker.host": worker.host ?? "?", "worker.address": worker.address ?? "?",
                                         "silent_seconds": String(Int(now - worker.lastSeen))]
            if worker.capacity == 0 {
                logger.info("worker left", fields)
            } else {
                logger.warning("worker lost: no heartbeat for \(Int(Pipeline.workerSilenceSeconds)) s; its work goes to other workers", fields)
            }
        }
        return live
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        wakeup.signal()
        finished.wait()
    }
}
