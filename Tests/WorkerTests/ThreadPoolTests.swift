import Foundation
import Synchronization
import Testing
@testable import Worker

/// The pool the deliveries run on: jobs never wait for one another, an idle thread takes the next
/// job, and a thread idle for long ends.
@Suite struct ThreadPoolTests {
    /// Waits up to `seconds` for `condition`.
    private func eventually(within seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !condition() {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    @Test func jobsRunSideBySideHoweverManyAreRunning() {
        let pool = ThreadPool(name: "test-pool", idleSeconds: 5)
        let jobs = 8
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        // Each job blocks until every job has started: a pool that ran one after another would
        // never start the second.
        for _ in 0..<jobs {
            finished.enter()
            pool.run {
                started.signal()
                release.wait()
                finished.leave()
            }
        }
        var running = 0
        while running < jobs, started.wait(timeout: .now() + 5) == .success { running += 1 }
        #expect(running == jobs)
        for _ in 0..<jobs { release.signal() }
        #expect(finished.wait(timeout: .now() + 5) == .success)
        #expect(eventually(within: 5) { pool.idleThreads == jobs })
    }

    @Test func anIdleThreadTakesTheNextJob() {
        let pool = ThreadPool(name: "test-pool", idleSeconds: 5)
        let threads = Mutex<[pthread_t]>([])
        let done = DispatchSemaphore(value: 0)
        for round in 0..<3 {
            pool.run {
                threads.withLock { $0.append(pthread_self()) }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 5) == .success, "round \(round)")
            #expect(eventually(within: 5) { pool.idleThreads == 1 }, "round \(round)")
        }
        let seen = threads.withLock { $0 }
        #expect(seen.count == 3 && Set(seen).count == 1, "\(seen)")
    }

    @Test func aThreadIdleForLongEnds() {
        let pool = ThreadPool(name: "test-pool", idleSeconds: 0.1)
        let done = DispatchSemaphore(value: 0)
        pool.run { done.signal() }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(eventually(within: 5) { pool.idleThreads == 0 })
        // A job after that gets a new thread.
        pool.run { done.signal() }
        #expect(done.wait(timeout: .now() + 5) == .success)
    }
}
