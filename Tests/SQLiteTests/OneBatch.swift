import Dispatch
import Synchronization
@testable import SQLite

/// Runs `works` as requests of one batch of the writer (`SQLiteDatabase.submitRequest`; the writer
/// is held until all are queued); each one's answer: its result once committed, false when the
/// commit failed or the request's own deferred write did.
func inOneBatch(_ database: SQLiteDatabase, _ works: [@Sendable () -> Bool]) -> [Bool] {
    let hold = DispatchSemaphore(value: 0), holding = DispatchSemaphore(value: 0)
    database.submitRequest({ holding.signal(); hold.wait(); return true }, onFailure: { false }, completion: { _ in })
    holding.wait()
    let results = Mutex([Int: Bool]())
    let done = DispatchGroup()
    for (index, work) in works.enumerated() {
        done.enter()
        database.submitRequest(work, onFailure: { false }, completion: { ok in
            results.withLock { $0[index] = ok }
            done.leave()
        })
    }
    hold.signal()
    done.wait()
    return results.withLock { results in works.indices.map { results[$0] ?? false } }
}
