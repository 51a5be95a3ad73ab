import Foundation
import Shared
import Synchronization

/// Binds the queue endpoints that workers connect to and keeps track of which workers are alive
/// from their heartbeats. The sockets live on one dedicated thread, as ZeroMQ requires.
final class WorkerRegistry: Sendable {
    struct Worker: Sendable {
        let id: String
        let pid: Int64
        let jobsInFlight: Int64
        let lastSeen: Double
    }

    private let settings: QueueSettings
    private let logger: Logger
    private let workers = Mutex<[String: Worker]>([:])
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(settings: QueueSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Binds both endpoints on the registry's thread; throws if either cannot be bound.
    func start(context: QueueContext) throws {
        let started = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        let thread = Thread { [self] in
            let jobs: QueueSocket
            let results: QueueSocket
            do {
                jobs = try QueueSocket(context, kind: .router)
                results = try QueueSocket(context, kind: .pull)
                try jobs.bind(settings.jobs)
                try results.bind(settings.results)
            } catch {
                failure.withLock { $0 = error }
                started.signal()
                finished.signal()
                return
            }
            started.signal()
            run(results: results)
            jobs.close()
            results.close()
            finished.signal()
        }
        thread.name = "herald-queue"
        thread.start()
        started.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        logger.info("queue bound", ["queue.jobs": settings.jobs, "queue.results": settings.results])
    }

    private func run(results: QueueSocket) {
        while !stopping.load(ordering: .relaxed) {
            do {
                guard let frames = try results.receive(timeoutMilliseconds: 200) else { continue }
                guard let frame = frames.last, let message = QueueMessage.decode(frame) else {
                    logger.warning("malformed queue message ignored")
                    continue
                }
                switch message {
                case .heartbeat(let id, let pid, let jobs):
                    let isNew = workers.withLock { registry in
                        let isNew = registry[id] == nil
                        registry[id] = Worker(id: id, pid: pid, jobsInFlight: jobs, lastSeen: monotonicSeconds())
                        return isNew
                    }
                    if isNew { logger.info("worker joined", ["worker.id": id, "worker.pid": String(pid)]) }
                }
            } catch {
                logger.error("queue receive failed", ["error": "\(error)"])
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }

    /// Workers heard from within the last five seconds.
    func liveWorkers() -> [Worker] {
        let now = monotonicSeconds()
        return workers.withLock { registry in
            registry = registry.filter { now - $0.value.lastSeen < 5 }
            return Array(registry.values)
        }
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}
