import Foundation
import Synchronization
import Core

/// Extends the lease of the shard a worker is working on every third of the lease, on its own
/// thread, so that a slow provider (long timeouts, a paused breaker, retries waiting) never lets the
/// lease run out and ingest hand the shard to another worker while this one is still sending it.
final class LeaseKeeper: Sendable {
    private let lost = Atomic<Bool>(false)
    private let stopping = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(store: any ShardStore, shard: Int64, worker: String, leaseSeconds: Int64, clock: any Clock, logger: Logger) {
        let interval = Double(leaseSeconds) / 3
        let thread = Thread(named: "lease") { [self] in
            var failures = FailureSpell(subject: "shard lease keeper", context: [("shard.id", String(shard))])
            while stopping.wait(timeout: .now() + interval) == .timedOut {
                do {
                    guard try store.extendLease(shard: shard, worker: worker, leaseUntil: clock.now() + leaseSeconds) else {
                        lost.store(true, ordering: .relaxed)
                        logger.warning("shard lease lost while working on it", ["shard.id": String(shard)])
                        break
                    }
                    failures.succeeded(logger: logger)
                } catch {
                    failures.failed(error, logger: logger)
                }
            }
            finished.signal()
        }
        thread.start()
    }

    /// True once the lease turned out to be someone else's.
    var isLost: Bool { lost.load(ordering: .relaxed) }

    /// Stops extending; returns when the keeper's thread has ended.
    func stop() {
        stopping.signal()
        finished.wait()
    }
}
