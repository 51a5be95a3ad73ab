#if canImport(Glibc)
import Glibc
#endif

/// A value behind a lock: glibc's adaptive mutex, which spins briefly and then sleeps, and which a
/// running thread may take before a woken one (it is not fair).
///
/// The project uses it instead of `Synchronization.Mutex`: on Linux that one is a
/// priority-inheritance futex, which hands a contended lock to the thread that waited longest, so
/// every contended release becomes a thread switch, and with more threads than CPUs the waiters
/// form convoys. This one lets whichever thread runs take the lock (docs/benchmarks.md, "One lock
/// for the project and batched getTags on PostgreSQL").
///
/// `@unchecked Sendable` invariant: `value` is read and written only between `pthread_mutex_lock`
/// and `pthread_mutex_unlock` on `mutex`, which lives as long as the lock.
public final class Lock<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock. `body` must not take this lock again.
    /// Inlined where it is called, with `body`: a call into this module would be generic, and would
    /// look up the metadata of the lock's and the result's types on every call.
    @inlinable @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
