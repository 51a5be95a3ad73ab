import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Core

/// Holds the `ConnectionTable` for the server's event loops, does what it answers, and runs the
/// sweeper thread that shuts down connections past their deadline.
///
/// Sockets are only ever shut down here, never closed (their `EventLoop` owns them), and only under
/// the lock while their entry is in the table. A loop removes a connection's entry
/// before it closes the socket, so a descriptor shut down here is never one the kernel has already
/// handed to a new connection.
final class ConnectionGuard: Sendable {
    let counters: HTTPConnectionCounters
    private let table: Lock<ConnectionTable>
    private let sweeping = Atomic<Bool>(false)
    private let sweeperStopped = DispatchSemaphore(value: 0)

    init(limits: ConnectionTable.Limits, counters: HTTPConnectionCounters) {
        self.counters = counters
        table = Lock(ConnectionTable(limits: limits))
    }

    /// A connection started on socket `fd`; returns its id in the table, or nil when the table
    /// refuses it (`ConnectionTable.Limits.hardLimit`): then close it at once.
    func opened(fd: Int32) -> UInt? {
        table.withLock { table -> UInt? in
            guard table.present < table.limits.hardLimit else { return nil }
            counters.opened()
            let (id, admission) = table.open(fd: fd, now: monotonicSeconds())
            if case .evicting(let victim) = admission {
                counters.countEvicted()
                shutdown(victim, Int32(SHUT_RDWR))
            }
            return id
        }
    }

    /// Returns false when the request is to be refused for want of a slot.
    func headersComplete(_ id: UInt) -> Bool {
        let admitted = table.withLock { $0.headersComplete(id, now: monotonicSeconds()) }
        if !admitted { counters.countRefused() }
        return admitted
    }

    func received(_ id: UInt, bytes: Int) { table.withLock { $0.received(id, bytes: bytes) } }
    func busy(_ id: UInt) { table.withLock { $0.busy(id) } }
    func answered(_ id: UInt) { table.withLock { $0.answered(id, now: monotonicSeconds()) } }
    func wrote(_ id: UInt) { table.withLock { $0.wrote(id, now: monotonicSeconds()) } }

    func closed(_ id: UInt) {
        table.withLock { $0.close(id) }
        counters.closed()
    }

    /// Shuts down every connection past its deadline.
    func sweep() {
        table.withLock { table in
            for (fd, cut) in table.overdue(now: monotonicSeconds()) {
                counters.countCut(cut)
                shutdown(fd, Int32(SHUT_RDWR))
            }
        }
    }

    /// Starts the sweeper thread: it looks for overdue connections every `interval` seconds.
    func startSweeping(interval: Double = 0.2) {
        sweeping.store(true, ordering: .sequentiallyConsistent)
        let thread = Thread(named: "http-deadlines") { [self] in
            while sweeping.load(ordering: .sequentiallyConsistent) {
                usleep(UInt32(interval * 1_000_000))
                sweep()
            }
            sweeperStopped.signal()
        }
        thread.start()
    }

    /// Stops the sweeper thread and waits for it.
    func stopSweeping() {
        guard sweeping.exchange(false, ordering: .sequentiallyConsistent) else { return }
        sweeperStopped.wait()
    }
}
