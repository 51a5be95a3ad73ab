import SDKClient
import Synchronization

/// What every worker of a run shares: when it started, when it ends (Ctrl-C moves the end to now),
/// and whether to drop everything at once (a second Ctrl-C).
final class RunControl: Sendable {
    /// `MonotonicClock` nanoseconds of the start.
    let start: Int64
    private let endNanos: Atomic<Int64>
    private let abortFlag = Atomic<Bool>(false)

    init(start: Int64, durationSeconds: Double) {
        self.start = start
        endNanos = Atomic(start + Int64(durationSeconds * 1e9))
    }

    /// No request starts at or after this time.
    var end: Int64 { endNanos.load(ordering: .relaxed) }

    /// Ends the run now: requests in flight still get their replies.
    func stop() {
        let now = MonotonicClock.now()
        var current = endNanos.load(ordering: .relaxed)
        while now < current {
            let (exchanged, original) = endNanos.compareExchange(expected: current, desired: now, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
    }

    /// Stop waiting for replies too.
    func abort() {
        stop()
        abortFlag.store(true, ordering: .relaxed)
    }

    var aborted: Bool { abortFlag.load(ordering: .relaxed) }
}
