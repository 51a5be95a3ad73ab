import Foundation
import Synchronization
import Core
import Delivery
import Queue

/// The worker's three threads. The queue thread owns the ZeroMQ sockets: it sends a heartbeat every
/// second, receives shard jobs and report batches, and sends acks. Runner threads, as many as the
/// shards a worker runs at once (`Pipeline.workerRunners`; it holds one more, waiting, so that a
/// runner never waits for the dispatcher between two shards), process a shard each, so that one shard's
/// last batches are on the network while the next shard's first ones go out (they share each
/// app's window, `BatchSlots`); the reports thread folds report batches into the statistics, so that
/// reports never wait behind a long campaign shard.
final class WorkerLoop: Sendable {
    let configuration: Configuration
    let logger: Logger
    let id: String
    /// The host named in heartbeats.
    let host: String
    /// The stable name that labels this worker's series on ingest's `/metrics`.
    let name: String
    let runner: ShardRunner
    let analytics: any AnalyticsStore
    let clock: any Clock
    let stats: DeliveryStats

    private let stopping = Atomic<Bool>(false)
    /// Set once the runner has finished: the queue thread then hands back what is left and exits.
    private let queueStopping = Atomic<Bool>(false)
    private let queueFinished = DispatchSemaphore(value: 0)
    private let runnerFinished = DispatchSemaphore(value: 0)
    private let reportsFinished = DispatchSemaphore(value: 0)
    /// Report batches `(after, through]` waiting.
    private let reportJobs = Lock<[(Int64, Int64)]>([])
    private let reportArrived = DispatchSemaphore(value: 0)
    private let jobs = Lock<[Int64]>([])
    private let jobArrived = DispatchSemaphore(value: 0)
    private let running = Atomic<Int>(0)
    /// Acks of finished shards and report batches, for the queue thread to send.
    private let acks = Lock<[QueueMessage]>([])
    /// Signalled with every ack queued, for the queue thread to send it now.
    private let ackQueued = Wakeup()

    init(configuration: Configuration, logger: Logger, id: String, name: String, host: String, runner: ShardRunner, analytics: any AnalyticsStore,
         clock: any Clock, stats: DeliveryStats) {
        self.analytics = analytics
        self.clock = clock
        self.stats = stats
        self.configuration = configuration
        self.logger = logger
        self.id = id
        self.host = host
        self.name = name
        self.runner = runner
    }

    func start(context: QueueContext) throws {
        let ready = DispatchSemaphore(value: 0)
        let failure = Lock<(any Error)?>(nil)
        let queueThread = Thread(named: "worker-queue") { [self] in
            let sockets: [QueueSockets]
            do {
                let queue = configuration.queue
                sockets = try queue.jobs.indices.map { index in
                    try QueueSockets(context: context, curve: queue.curve, serverKey: queue.curve?.serverPublicKeys[index],
                                     jobsEndpoint: queue.jobs[index], resultsEndpoint: queue.results[index], id: id)
                }
            } catch {
                failure.withLock { $0 = error }
                ready.signal()
                queueFinished.signal()
                return
            }
            ready.signal()
            runQueue(sockets)
            for pair in sockets { pair.close() }
            queueFinished.signal()
        }
        queueThread.start()
        ready.wait()
        if let error = failure.withLock({ $0 }) { throw error }

        for _ in 0..<Pipeline.workerRunners {
            let runnerThread = Thread(named: "worker-runner") { [self] in
                runJobs()
                runnerFinished.signal()
            }
            runnerThread.start()
        }
        let reportsThread = Thread(named: "worker-reports") { [self] in
            runReports()
            reportsFinished.signal()
        }
        reportsThread.start()
        logger.info("worker started", ["worker.id": id, "queue.jobs": configuration.queue.jobs.joined(separator: ",")])
    }

    private var inFlight: Int64 { Int64(jobs.withLock { $0.count } + running.load(ordering: .relaxed)) }

    /// This worker's heartbeat: who and where it is, what it can take, and its delivery counts.
    private func heartbeat(capacity: Int64, jobsInFlight: Int64) -> QueueMessage {
        .heartbeat(worker: id, name: name, host: host, pid: Int64(getpid()), capacity: capacity, jobsInFlight: jobsInFlight, stats: stats.snapshot())
    }

    /// Heartbeats and acks go to every ingest (any of them may be dispatching, or take over); jobs
    /// come from whichever dispatches.
    private func runQueue(_ ingests: [QueueSockets]) {
        var lastHeartbeat = 0.0
        while !queueStopping.load(ordering: .relaxed) {
            // Each link logs when its handshake completes, and warns while it has not (and connects
            // anew after a refused CURVE handshake, which libzmq does not retry: a key listed later works).
            let cameUp = ingests.map { ingest in
                ingest.jobs.check(logger: logger)
                return ingest.results.check(logger: logger)
            }
            let now = monotonicSeconds()
            let acks = pendingAcks()
            let beat = now - lastHeartbeat >= 1 || !acks.isEmpty
            if beat { lastHeartbeat = now }
            // Acks wait in the queue of an ingest that is away until it is back. A heartbeat tells how
            // things stand now, so it goes only over links that are up (at once over one that just
            // came up): none arrives stale, nor takes the room of acks in an absent ingest's queue.
            // While stopping, capacity 0 tells the dispatcher to send nothing more.
            let current = beat || cameUp.contains(true)
                ? heartbeat(capacity: stopping.load(ordering: .relaxed) ? 0 : Pipeline.workerCapacity, jobsInFlight: inFlight) : nil
            for (index, ingest) in ingests.enumerated() {
                var outgoing = acks
                if let current, ingest.results.isUp, beat || cameUp[index] { outgoing.append(current) }
                for message in outgoing {
                    do {
                        try ingest.results.socket.send([message.encoded], wait: false)
                    } catch {
                        logger.debug("queue message not sent", ["queue.results": ingest.results.endpoint, "error": "\(error)"])
                    }
                }
            }
            do {
                // A runner's ack ends the wait at once (`ackQueued`), so that the dispatcher hears of a
                // finished shard, and a finished message, without waiting out the poll.
                guard let ready = try QueueSocket.firstReadable(ingests.map(\.jobs.socket), timeoutMilliseconds: 20, wakeup: ackQueued),
                      let frames = try ingests[ready].jobs.socket.receive(timeoutMilliseconds: 0) else { continue }
                switch frames.last.flatMap(QueueMessage.decode) {
                case .job(let shard):
                    jobs.withLock { $0.append(shard) }
                    jobArrived.signal()
                case .reports(let after, let through):
                    reportJobs.withLock { $0.append((after, through)) }
                    reportArrived.signal()
                default:
                    logger.warning("malformed job ignored", ["bytes": String(frames.last?.count ?? 0)])
                }
            } catch {
                logger.error("queue receive failed", ["error": "\(error)"])
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        // Jobs that arrived after the runner stopped go back to the pool; then the last acks, and tell
        // ingest at once that this worker holds nothing any more.
        for shard in jobs.withLock({ pending in defer { pending.removeAll() }; return pending }) {
            try? runner.store.releaseLease(shard: shard, worker: id)
        }
        var last = pendingAcks()
        last.append(heartbeat(capacity: 0, jobsInFlight: 0))
        for message in last {
            for ingest in ingests { try? ingest.results.socket.send([message.encoded], wait: false) }
        }
    }

    private func pendingAcks() -> [QueueMessage] {
        acks.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
    }

    /// Processes report batches until stopping; batches not started then are left to the
    /// dispatcher, which hands them to another worker.
    private func runReports() {
        while !stopping.load(ordering: .relaxed) {
            guard reportArrived.wait(timeout: .now() + .milliseconds(200)) == .success,
                  let (after, through) = reportJobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            do {
                let done = try analytics.processReports(after: after, through: through, now: clock.now())
                acks.withLock { $0.append(.reportsDone(worker: id, after: after, processed: Int64(done.count), setAside: Int64(done.setAside))) }
                ackQueued.signal()
                logger.verbose("reports processed", ["reports.after": String(after), "reports.processed": String(done.count),
                                                     "reports.set_aside": String(done.setAside)])
            } catch {
                logger.error("report batch failed; it will be handed out again", ["reports.after": String(after), "error": "\(error)"])
            }
        }
    }

    private func runJobs() {
        while true {
            if jobArrived.wait(timeout: .now() + .milliseconds(200)) == .timedOut {
                if stopping.load(ordering: .relaxed) { break }
                continue
            }
            // Counted as running before it leaves the queue, so that a heartbeat never misses it.
            running.add(1, ordering: .relaxed)
            guard let shard = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                running.subtract(1, ordering: .relaxed)
                continue
            }
            if stopping.load(ordering: .relaxed) {
                try? runner.store.releaseLease(shard: shard, worker: id)
                running.subtract(1, ordering: .relaxed)
                continue
            }
            runner.run(shard: shard) { stopping.load(ordering: .relaxed) }
            // No longer counted before the ack goes out: the heartbeat sent with the ack offers
            // the room it leaves.
            running.subtract(1, ordering: .relaxed)
            acks.withLock { $0.append(.ack(worker: id, shard: shard)) }
            ackQueued.signal()
        }
        for shard in jobs.withLock({ pending in defer { pending.removeAll() }; return pending }) {
            try? runner.store.releaseLease(shard: shard, worker: id)
        }
    }

    /// Stops taking work, hands back what was not started, finishes the batch in hand, and returns.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        jobArrived.signal()
        for _ in 0..<Pipeline.workerRunners { runnerFinished.wait() }
        reportsFinished.wait()
        queueStopping.store(true, ordering: .relaxed)
        ackQueued.signal()
        queueFinished.wait()
    }
}
