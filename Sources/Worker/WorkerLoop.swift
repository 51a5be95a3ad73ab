import Foundation
import Shared
import Synchronization

/// The worker's queue loop: connects to ingest, announces itself with a heartbeat every second,
/// and runs the jobs it receives on its own thread (ZeroMQ sockets stay on the thread that made them).
final class WorkerLoop: Sendable {
    let configuration: Configuration
    let logger: Logger
    let id: String
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.id = "\(ProcessInfo.processInfo.hostName)-\(getpid())"
    }

    func start(context: QueueContext) throws {
        let ready = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        let thread = Thread { [self] in
            let jobs: QueueSocket
            let results: QueueSocket
            do {
                jobs = try QueueSocket(context, kind: .dealer)
                try jobs.setIdentity(id)
                try jobs.connect(configuration.queue.jobs)
                results = try QueueSocket(context, kind: .push)
                try results.setHighWaterMark(10_000)
                try results.connect(configuration.queue.results)
            } catch {
                failure.withLock { $0 = error }
                ready.signal()
                finished.signal()
                return
            }
            ready.signal()
            run(jobs: jobs, results: results)
            jobs.close()
            results.close()
            finished.signal()
        }
        thread.name = "herald-worker-queue"
        thread.start()
        ready.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        logger.info("worker started", ["worker.id": id, "queue.jobs": configuration.queue.jobs])
    }

    private func run(jobs: QueueSocket, results: QueueSocket) {
        var lastHeartbeat = 0.0
        while !stopping.load(ordering: .relaxed) {
            let now = monotonicSeconds()
            if now - lastHeartbeat >= 1 {
                do {
                    try results.send([QueueMessage.heartbeat(worker: id, pid: Int64(getpid()), jobsInFlight: 0).encoded], wait: false)
                } catch {
                    logger.debug("heartbeat not sent", ["error": "\(error)"])
                }
                lastHeartbeat = now
            }
            do {
                if let frames = try jobs.receive(timeoutMilliseconds: 200) {
                    logger.warning("job of an unknown kind ignored", ["bytes": String(frames.last?.count ?? 0)])
                }
            } catch {
                logger.error("queue receive failed", ["error": "\(error)"])
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}
