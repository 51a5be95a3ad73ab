import Foundation
import Core

/// Threads that each run one job at a time and stay for the next: a job goes to a thread that is
/// idle, or to a new one when none is, so jobs never wait for one another (a delivery blocks for
/// its provider's answers). A thread idle for `idleSeconds` ends.
final class ThreadPool: Sendable {
    /// A thread waiting for its next job: `run` hands one over and signals `wake`.
    /// `@unchecked Sendable` invariant: `job` is written by `run` while `idle` is locked and the
    /// thread is in it, and read by the thread after `wake`.
    private final class Idle: @unchecked Sendable {
        let wake = DispatchSemaphore(value: 0)
        var job: (@Sendable () -> Void)?
    }

    /// The pool the worker's deliveries run on.
    static let deliveries = ThreadPool(name: "deliver", idleSeconds: 30)

    private let name: String
    private let idleSeconds: Double
    /// Threads waiting for a job; the last to become idle takes the next one, so that threads
    /// beyond what the load needs stay idle and end.
    private let idle = Lock<[Idle]>([])

    init(name: String, idleSeconds: Double) {
        self.name = name
        self.idleSeconds = idleSeconds
    }

    /// Threads waiting for a job now.
    var idleThreads: Int { idle.withLock { $0.count } }

    /// Runs `job` on an idle thread, or on a new one.
    func run(_ job: @escaping @Sendable () -> Void) {
        let waiting = idle.withLock { idle -> Idle? in
            guard let thread = idle.popLast() else { return nil }
            thread.job = job
            return thread
        }
        if let waiting {
            waiting.wake.signal()
            return
        }
        let thread = Thread(named: name) { [self] in work(first: job) }
        thread.start()
    }

    private func work(first: @escaping @Sendable () -> Void) {
        var job = first
        let me = Idle()
        while true {
            job()
            idle.withLock { $0.append(me) }
            if me.wake.wait(timeout: .now() + idleSeconds) == .timedOut {
                // Gone unless `run` took this thread meanwhile: then its job is on the way.
                let left = idle.withLock { idle -> Bool in
                    guard let index = idle.firstIndex(where: { $0 === me }) else { return false }
                    idle.remove(at: index)
                    return true
                }
                if left { return }
                me.wake.wait()
            }
            guard let next = me.job else { return }
            me.job = nil
            job = next
        }
    }
}
